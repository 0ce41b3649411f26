/**
 * `bench:store --parts codecs`: retrieval quality of `@bfe/store` per token codec
 * (`StoreOptions.codec`, METHOD.md §8 "Compressed and approximate token search"), measured to
 * predeclare the store's default codec. Per dataset and codec (codec-run.ts): a store created
 * with the codec, every bank's memories added with the experiment's encoded vectors (`bfe
 * encode`'s cached bank, replayed: codec-banks.ts) and flushed, so every search reads the
 * codec's segments, not the fp32 memtable (checked: no bank keeps a memtable row; the largest
 * |Δ| between a view's token states and the encoded ones is reported); then every query
 * searched in its bank with `sparse-fusion` and `no-fusion` (sparse, no fusion) at the
 * experiment's k 64, α 0.5, top 10, and scored with `@bfe/eval` (codec-report.ts: Recall@10,
 * NDCG@10, headline = mean over subtasks; Δ against the same run's fp32 store by `comparePaired`,
 * the stratified paired bootstrap over queries, 10,000 resamples, seed 42, and the cluster
 * bootstrap over banks). The fp32 store is set beside the experiment's own scored run (its
 * `per-query.jsonl`) on that run's queries. Labels are read only to score.
 *
 * `--resident-products fp32,int8` builds each codec's store again with int8 resident banks
 * (`bfe serve --resident-product int8`), Δ against the fp32 store with fp32 resident banks.
 *
 * Each bank is flushed once, after all its adds: one segment per bank, whose sq8/sq4 model is
 * fitted (per-dimension min/max) on that bank's tokens; a store that flushes a bank in several
 * pieces fits one model per piece (a compaction keeps them), which this part does not measure.
 *
 * - LoCoMo: each conversation one bank, every query the loader keeps searched in its own.
 * - LongMemEval-S: each question's haystack one bank (its candidate sessions, as the
 *   experiment ranks them). `--lme-every n` keeps every n-th question of the runner's order
 *   (subtask, then id): a subset fixed before any result, never chosen on figures. All 418
 *   questions (≈ 2.2 M tokens over the haystacks) take about 12 minutes for the four codecs on
 *   2 busy cores, so the default is every question.
 */
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { SparseScorer } from '@bfe/scorer';
import { checkQueryModel, openEmbedder } from '@bfe/store';
import { codecBenchmark, type CodecBenchmark } from './codec-banks.js';
import {
  CODEC_HEAD,
  EXPERIMENT_HEAD,
  codecRows,
  experimentLines,
  experimentRows,
} from './codec-report.js';
import {
  CODECS,
  RESIDENT_PRODUCTS,
  runCodec,
  type Codec,
  type CodecRun,
  type ResidentProduct,
} from './codec-run.js';
import { flag, list, positive, someOf } from '../shared/cli.js';
import { repoRoot } from '../shared/paths.js';
import { note } from '../shared/table.js';

export { CODEC_HEAD, EXPERIMENT_HEAD };

const DATASETS = ['locomo', 'longmemeval-s'] as const;
type Dataset = (typeof DATASETS)[number];

/** `bfe encode`'s cached banks (MiniLM, fp32, max length 128) and the experiments' runs. */
const ENCODED: Record<Dataset, string> = {
  locomo:
    '.bfe-cache/objects/encode/13b6bd6a0716309e83b4177a42f3b29f09f9df78b49ed5dfdec9d7810a32aa44/bank',
  'longmemeval-s':
    '.bfe-cache/objects/encode/a9b204e5f55640f24fa15df1965e4386f464c81634798bdd90d23184b47674eb/bank',
};
/**
 * The experiments' scored runs of the same encoded vectors: LoCoMo's Table 5 run (strict split,
 * test part) and its chunks run (all 1,536 queries, no split; same arrow files as the cached
 * bank), LongMemEval-S's Table 5 run (all 418 questions).
 */
const RUNS: Record<Dataset, string> = {
  locomo: 'runs/table5-locomo,runs/chunks-locomo',
  'longmemeval-s': 'runs/table5-longmemeval-s',
};

/** The part's flags, as `commander` parses them. */
export interface CodecOptions {
  codecs: Codec[];
  queryModels: string[];
  residentProducts: ResidentProduct[];
  codecDatasets: Dataset[];
  lmeEvery: number;
  locomoEncoded: string;
  lmeEncoded: string;
  locomoRun: string[];
  lmeRun: string[];
}

/** Adds the part's flags to `bench:store`'s command. */
export function codecFlags(command: Command): Command {
  return command
    .addOption(flag('--codecs <list>', 'codecs: store codecs', someOf(CODECS), CODECS.join(',')))
    .addOption(
      flag(
        '--query-models <list>',
        'codecs: installed models that encode the queries of an fp32 store, each a row (passages replayed)',
        list,
        '',
      ),
    )
    .addOption(
      flag(
        '--resident-products <list>',
        "codecs: each codec's store with each resident product (fp32: the reference)",
        someOf(RESIDENT_PRODUCTS),
        'fp32',
      ),
    )
    .addOption(
      flag('--codec-datasets <list>', 'codecs: datasets', someOf(DATASETS), DATASETS.join(',')),
    )
    .addOption(flag('--lme-every <n>', 'codecs: every n-th LongMemEval-S question', positive, '1'))
    .option('--locomo-encoded <dir>', "codecs: LoCoMo's encoded bank", ENCODED.locomo)
    .option('--lme-encoded <dir>', "codecs: LongMemEval-S's encoded bank", ENCODED['longmemeval-s'])
    .addOption(flag('--locomo-run <list>', "codecs: LoCoMo's experiment runs", list, RUNS.locomo))
    .addOption(
      flag(
        '--lme-run <list>',
        "codecs: LongMemEval-S's experiment runs",
        list,
        RUNS['longmemeval-s'],
      ),
    );
}

/** Every dataset's rows: the codec table and the fp32 store against the experiment. */
export async function codecQuality(
  options: CodecOptions,
  context: { readonly work: string; readonly threads?: number | undefined },
): Promise<{ codecs: string[][]; experiment: string[][] }> {
  const codecs: string[][] = [];
  const experiment: string[][] = [];
  const scorer = await SparseScorer.open({
    spin: false,
    ...(context.threads === undefined ? {} : { threads: context.threads }),
  });
  try {
    for (const name of options.codecDatasets) {
      const lme = name === 'longmemeval-s';
      const loaded = await loadDataset(name, { location: dataLocationFromEnv() });
      const encoded = resolve(repoRoot, lme ? options.lmeEncoded : options.locomoEncoded);
      const every = lme ? options.lmeEvery : 1;
      note(`codecs: ${name}, encoded bank ${encoded} …`);
      const b = await codecBenchmark(
        name,
        loaded.benchmark,
        loaded.labels,
        encoded,
        (_, i) => i % every === 0,
      );
      const tokens = [...b.banks.values()].reduce((a, ids) => a + ids.length, 0);
      note(
        `codecs: ${name}: ${b.banks.size} banks, ${tokens} memories, ${b.queries.length} queries, ${b.duplicateTexts} repeated texts (same vectors)`,
      );
      // Every query model checked before any store is built, so a refused one costs nothing.
      for (const model of options.queryModels) await checkQueryModelFor(b, model);
      const runs: CodecRun[] = [];
      for (const codec of options.codecs)
        for (const resident of options.residentProducts) {
          const r = await runCodec(
            b,
            codec,
            join(context.work, `codec-${codec}`),
            scorer,
            context.threads,
            undefined,
            resident,
          );
          note(
            `codecs: ${name} ${codec} (${resident} resident): ${r.tokens} tokens, ${r.segments} segments, ${(r.segmentBytes / r.tokens).toFixed(0)} B/token, max |Δ| ${r.maxDelta}, add+flush ${r.addSeconds.toFixed(1)} s, search ${r.searchSeconds.toFixed(1)} s`,
          );
          runs.push(r);
        }
      for (const model of options.queryModels) {
        const r = await runQueryModel(
          b,
          model,
          join(context.work, `query-${model}`),
          scorer,
          context.threads,
        );
        note(`codecs: ${name} fp32, queries ${model}: search ${r.searchSeconds.toFixed(1)} s`);
        runs.push(r);
      }
      codecs.push(...codecRows(b, runs));
      const fp32 = runs.find(
        (r) => r.codec === 'fp32' && r.queries === 'replayed' && r.resident === 'fp32',
      );
      if (fp32 === undefined) continue;
      for (const dir of lme ? options.lmeRun : options.locomoRun) {
        const { run, lines } = await experimentLines(resolve(repoRoot, dir));
        experiment.push(...experimentRows(b, fp32, run, lines));
      }
    }
  } finally {
    await scorer.dispose();
  }
  return { codecs, experiment };
}

/**
 * Throws unless the installed model `model` may encode queries for the bank's model
 * (`checkQueryModel`, as `bfe serve --query-model` checks), the installed bank model being the
 * graph that encoded the bank.
 */
async function checkQueryModelFor(b: CodecBenchmark, model: string): Promise<void> {
  const passage = await loadModelManifest(resolveModelDir(b.model.name));
  if (passage.modelSha256 !== b.model.sha256)
    throw new Error(`the installed ${b.model.name} is not the graph that encoded the bank`);
  await checkQueryModel(b.model.name, model);
}

/**
 * The fp32 store of `b` with its queries encoded live by the installed model `model` (one
 * onnxruntime thread, checked first by {@link checkQueryModelFor}), its passages the encoded
 * bank's rows.
 */
async function runQueryModel(
  b: CodecBenchmark,
  model: string,
  dir: string,
  scorer: SparseScorer,
  threads: number | undefined,
): Promise<CodecRun> {
  const embedder = await openEmbedder({ model, threads: 1 });
  try {
    return await runCodec(b, 'fp32', dir, scorer, threads, { name: model, embedder });
  } finally {
    await embedder.dispose();
  }
}
