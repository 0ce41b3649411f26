import { ConfigError } from '@bfe/core';
import { SparseScorer } from '@bfe/scorer';
import type { RelevanceCalibration } from '@bfe/store';
import type { Experiment } from '../experiment/config.js';
import { openRunStore } from '../experiment/run-experiment.js';
import { stageContext } from '../experiment/stage.js';
import { runDatasetStage } from '../experiment/stages/dataset.js';
import { runSplitStage } from '../experiment/stages/split.js';
import { encodedBank } from './cached-bank.js';
import { fitAndEvaluate, type CalibrationOutcome } from './evaluate.js';
import { scoreQueries } from './features.js';

/** `bfe calibrate`'s inputs. */
export interface CalibrateOptions {
  /** A LongMemEval experiment with a seeded split (its train/validation/test parts). */
  readonly experiment: Experiment;
  readonly configPath: string;
  readonly cacheDir?: string | undefined;
  /** L2 strength on the standardised weights (predeclared; default 1e-3). */
  readonly l2: number;
  /** The calibration's name, e.g. `all-minilm-l6-v2/longmemeval-s/v1`. */
  readonly name: string;
  readonly log: (line: string) => void;
  readonly progress: (label: string, done: number, total: number) => void;
}

/** The calibration file and the figures behind it. */
export interface CalibrateOutcome {
  readonly calibration: RelevanceCalibration;
  readonly outcome: CalibrationOutcome;
  readonly splits: { readonly answerable: string; readonly abstention: string };
  readonly banks: { readonly answerable: string; readonly abstention: string };
}

/**
 * Fits the store's relevance calibration on an experiment's LongMemEval questions and measures
 * how well it says "nothing relevant here": the answerable questions (the experiment's
 * dataset) and the abstention questions (the same file with `abstention: 'only'`), each split
 * by the experiment's split (policy, seed, ratios) through the split stage; every query scored
 * by the store's own search on the encoded banks (reused by content: `cached-bank.ts`); the
 * fit on the training part, the threshold on validation, the figures on test (`evaluate.ts`).
 */
export async function runCalibrate(o: CalibrateOptions): Promise<CalibrateOutcome> {
  const e = o.experiment;
  if (!e.dataset.name.startsWith('longmemeval')) {
    throw new ConfigError(`calibrate: needs a LongMemEval dataset, got '${e.dataset.name}'`);
  }
  if (e.split.policy === 'none' || typeof e.split.seed !== 'number') {
    throw new ConfigError('calibrate: needs a split with a numeric seed (train/validation/test)');
  }
  const seed = e.split.seed;
  const abstentionExperiment: Experiment = {
    ...e,
    dataset: { ...e.dataset, options: { ...e.dataset.options, abstention: 'only' } },
  };
  const store = await openRunStore(o.cacheDir, o.log);
  const ctx = stageContext(store, o.log, o.progress);
  const scorer = await SparseScorer.open({});
  try {
    const sides = [];
    for (const exp of [e, abstentionExperiment]) {
      const dataset = await runDatasetStage(ctx, exp, o.configPath);
      const split = await runSplitStage(ctx, exp, seed, dataset);
      const encoded = await encodedBank(ctx, store.root, exp, dataset);
      const model = encoded.bank.manifest.model;
      const label = exp === e ? 'score answerable' : 'score abstention';
      const scores = await scoreQueries(
        await dataset.load(),
        encoded.bank,
        scorer,
        { model: model.sha256, tokenK: e.scorer.k, alpha: e.scorer.alpha },
        (done, total) => o.progress(label, done, total),
      );
      sides.push({ split: split.split, scores, encoded, model });
    }
    const [answerable, abstention] = sides as [(typeof sides)[0], (typeof sides)[0]];
    const part = (name: 'train' | 'validation' | 'test'): Set<string> =>
      new Set([...answerable.split.queries[name], ...abstention.split.queries[name]]);
    const outcome = fitAndEvaluate(
      answerable.scores,
      abstention.scores,
      { train: part('train'), validation: part('validation'), test: part('test') },
      o.l2,
    );
    const calibration: RelevanceCalibration = {
      schemaVersion: 1,
      name: o.name,
      model: { name: answerable.model.name, sha256: answerable.model.sha256 },
      maxLength: answerable.encoded.bank.manifest.maxLength,
      features: ['pooled', 'sparse'],
      intercept: outcome.intercept,
      weights: outcome.weights,
      threshold: outcome.validation.threshold,
      fitted: {
        command: `bfe calibrate ${o.configPath}`,
        dataset: e.dataset,
        split: { policy: e.split.policy, seed, ratios: e.split.ratios },
        splitHashes: { answerable: answerable.split.hash, abstention: abstention.split.hash },
        scorer: { tokenK: e.scorer.k, alpha: e.scorer.alpha },
        trainPairs: outcome.trainPairs,
        trainRelevant: outcome.trainRelevant,
        l2: o.l2,
        threshold: 'best F1 at leaving validation abstention questions without results',
      },
    };
    return {
      calibration,
      outcome,
      splits: { answerable: answerable.split.hash, abstention: abstention.split.hash },
      banks: { answerable: answerable.encoded.dir, abstention: abstention.encoded.dir },
    };
  } finally {
    await scorer.dispose();
  }
}

/** The outcome as Markdown tables (BENCHMARKS.md's shape). */
export function renderCalibration(r: CalibrateOutcome): string {
  const o = r.outcome;
  const f = (v: number, d = 3): string => v.toFixed(d);
  const sep = o.testSeparation;
  const lines = [
    `relevance = σ(${f(o.intercept)} + ${f(o.weights[0])}·pooled + ${f(o.weights[1])}·sparse), ` +
      `fitted on ${o.trainPairs} training pairs (${o.trainRelevant} relevant), L2 ${o.l2}`,
    '',
    '| score (query maximum) | test AUROC, abstention vs answerable | 95 % interval |',
    '|---|---|---|',
    ...(
      [
        ['calibrated relevance', sep.relevance],
        ['pooled cosine', sep.pooled],
        ['sparse evidence score', sep.sparse],
        ['fused score (per-query z)', sep.fused],
      ] as const
    ).map(([name, s]) => `| ${name} | ${f(s.auroc)} | ${f(s.interval[0])}–${f(s.interval[1])} |`),
    '',
    `test: ${sep.relevance.answerable} answerable, ${sep.relevance.abstention} abstention questions; ` +
      `validation AUROC ${f(o.validation.auroc)}`,
    '',
    '| minScore (chosen on validation) | part | flagged | precision | recall | F1 | answerable emptied |',
    '|---|---|---|---|---|---|---|',
    `| ${f(o.validation.threshold, 4)} | validation | ${o.validation.flagged} | ${f(o.validation.precision)} | ` +
      `${f(o.validation.recall)} | ${f(o.validation.f1)} | — |`,
    `| ${f(o.validation.threshold, 4)} | test | ${o.test.flagged} | ${f(o.test.precision)} | ` +
      `${f(o.test.recall)} | ${f(o.test.f1)} | ${o.test.answerableEmptied} of ${o.test.answerable} |`,
    '',
    `pairs (test answerable): ${o.testPairs.pairs} (${o.testPairs.relevant} relevant), mean relevance ` +
      `${f(o.testPairs.meanRelevance, 4)} vs rate ${f(o.testPairs.relevant / o.testPairs.pairs, 4)}, ` +
      `Brier ${f(o.testPairs.brier, 4)}, ECE ${f(o.testPairs.ece, 4)}, AUROC ${f(o.testPairs.auroc)}`,
  ];
  return lines.join('\n');
}
