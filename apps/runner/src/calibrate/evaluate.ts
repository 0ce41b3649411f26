import type { QueryScores } from './features.js';
import {
  auroc,
  aurocInterval,
  bestF1Threshold,
  fitLogistic,
  flagBelow,
  type FlagCounts,
} from './logistic.js';

/** The split parts of the answerable and of the abstention questions (query ids). */
export interface CalibrationParts {
  readonly train: ReadonlySet<string>;
  readonly validation: ReadonlySet<string>;
  readonly test: ReadonlySet<string>;
}

/** How well one query-level score tells abstention questions from answerable ones. */
export interface Separation {
  /** AUROC for "nothing relevant here" (abstention = positive, lower score = more likely). */
  readonly auroc: number;
  /** 95 % interval: seeded bootstrap over questions, stratified by kind. */
  readonly interval: [number, number];
  readonly answerable: number;
  readonly abstention: number;
}

/** What {@link fitAndEvaluate} found: the fit, its threshold and the test figures. */
export interface CalibrationOutcome {
  readonly intercept: number;
  readonly weights: [number, number];
  readonly l2: number;
  readonly trainPairs: number;
  readonly trainRelevant: number;
  /** The validation threshold (best F1 at flagging abstention questions) and its counts. */
  readonly validation: FlagCounts & { readonly auroc: number };
  /** On test, at the validation threshold. */
  readonly test: FlagCounts & {
    /** Answerable test questions left with no result (their gold then lost). */
    readonly answerableEmptied: number;
    readonly answerable: number;
  };
  /** Test AUROC of the calibrated relevance beside the raw scores' (each its query maximum). */
  readonly testSeparation: Record<'relevance' | 'pooled' | 'sparse' | 'fused', Separation>;
  /** Pair level, test answerable questions: how well `relevance` is calibrated. */
  readonly testPairs: {
    readonly pairs: number;
    readonly relevant: number;
    readonly meanRelevance: number;
    readonly brier: number;
    /** Expected calibration error over 10 equal-width bins. */
    readonly ece: number;
    readonly auroc: number;
  };
}

const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

/**
 * Fits the relevance calibration on the training answerable questions' (query, candidate)
 * pairs only (label: the candidate is relevant), chooses the `minScore` threshold on the
 * validation questions (answerable and abstention: best F1 at leaving an abstention question
 * without results, i.e. its best relevance under the threshold), and measures it once on test.
 * Test labels are read only for the test figures.
 *
 * @throws {Error} when a part has no question of either kind.
 */
export function fitAndEvaluate(
  answerable: readonly QueryScores[],
  abstention: readonly QueryScores[],
  parts: CalibrationParts,
  l2: number,
): CalibrationOutcome {
  const train = answerable.filter((q) => parts.train.has(q.id));
  const pairs = train.reduce((n, q) => n + q.pooled.length, 0);
  const x = new Float64Array(pairs * 2);
  const y = new Uint8Array(pairs);
  let i = 0;
  for (const q of train) {
    for (let c = 0; c < q.pooled.length; c++, i++) {
      x[i * 2] = q.pooled[c]!;
      x[i * 2 + 1] = q.sparse[c]!;
      y[i] = q.relevant[c]!;
    }
  }
  const fit = fitLogistic(x, 2, y, { l2 });
  const [wPooled, wSparse] = fit.weights as [number, number];
  const rel = (q: QueryScores, c: number): number =>
    sigmoid(fit.intercept + wPooled * q.pooled[c]! + wSparse * q.sparse[c]!);
  const best = (q: QueryScores): number => Math.max(...q.pooled.map((_, c) => rel(q, c)));

  const part = (ids: ReadonlySet<string>) => {
    const a = answerable.filter((q) => ids.has(q.id));
    const b = abstention.filter((q) => ids.has(q.id));
    if (a.length === 0 || b.length === 0) {
      throw new Error('fitAndEvaluate: a split part lacks answerable or abstention questions');
    }
    return { queries: [...a, ...b], labels: [...a.map(() => 0), ...b.map(() => 1)] };
  };
  const separation = (
    p: ReturnType<typeof part>,
    score: (q: QueryScores) => number,
  ): Separation => {
    const scores = p.queries.map((q) => -score(q));
    return {
      auroc: auroc(scores, p.labels),
      interval: aurocInterval(scores, p.labels),
      answerable: p.labels.filter((l) => l === 0).length,
      abstention: p.labels.filter((l) => l === 1).length,
    };
  };

  const val = part(parts.validation);
  const chosen = bestF1Threshold(val.queries.map(best), val.labels);
  const threshold = Math.min(1, chosen.threshold);
  const test = part(parts.test);
  const testBest = test.queries.map(best);
  const atThreshold = flagBelow(testBest, test.labels, threshold);
  const emptied = testBest.filter((s, k) => test.labels[k] === 0 && s < threshold).length;
  const max = (v: readonly number[]): number => Math.max(...v);
  return {
    intercept: fit.intercept,
    weights: [wPooled, wSparse],
    l2,
    trainPairs: pairs,
    trainRelevant: y.reduce((n, v) => n + v, 0),
    validation: { ...chosen, threshold, auroc: separation(val, best).auroc },
    test: {
      ...atThreshold,
      answerableEmptied: emptied,
      answerable: test.labels.filter((l) => l === 0).length,
    },
    testSeparation: {
      relevance: separation(test, best),
      pooled: separation(test, (q) => max(q.pooled)),
      sparse: separation(test, (q) => max(q.sparse)),
      fused: separation(test, (q) => max(q.fused)),
    },
    testPairs: pairCalibration(
      answerable.filter((q) => parts.test.has(q.id)),
      rel,
    ),
  };
}

function pairCalibration(
  queries: readonly QueryScores[],
  rel: (q: QueryScores, c: number) => number,
): CalibrationOutcome['testPairs'] {
  const p: number[] = [];
  const y: number[] = [];
  for (const q of queries) {
    for (let c = 0; c < q.pooled.length; c++) {
      p.push(rel(q, c));
      y.push(q.relevant[c]!);
    }
  }
  const bins = Array.from({ length: 10 }, () => ({ n: 0, p: 0, y: 0 }));
  let brier = 0;
  for (let k = 0; k < p.length; k++) {
    brier += (p[k]! - y[k]!) ** 2;
    const bin = bins[Math.min(9, Math.floor(p[k]! * 10))]!;
    bin.n++;
    bin.p += p[k]!;
    bin.y += y[k]!;
  }
  const ece = bins.reduce((e, b) => e + Math.abs(b.p - b.y) / p.length, 0);
  return {
    pairs: p.length,
    relevant: y.reduce((n, v) => n + v, 0),
    meanRelevance: p.reduce((s, v) => s + v, 0) / p.length,
    brier: brier / p.length,
    ece,
    auroc: auroc(p, y),
  };
}
