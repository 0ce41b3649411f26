/**
 * The paper's Table 5 from `bfe run` folders: per run (one codec × backend of the experiment's
 * `index` section), bytes per token, total index bytes, the index stage's build seconds (from
 * the receipt: a cached stage shows its hit time, so use a fresh cache), and sparse-fusion and
 * no-fusion R@10 / NDCG@10 with the paired difference to the base run (the first folder, exact
 * fp32): mean and 95% bootstrap CI over queries, stratified by subtask (@bfe/eval's
 * `pairedBootstrap`, 10,000 resamples, seed 42), from each run's per-query.jsonl. The same run
 * also measures, in this process, each row's usearch graph bytes, token top-k recall@64 against
 * the base run's exact fp32 search and per-query latency p50 / p90 (`table5-tokens.ts`: states
 * and codes read by position, graphs memory-mapped; `--in-ram`: read into memory and loaded).
 *
 * pnpm bench:table5 [--markdown] [--in-ram] [--threads N] <base-run> <run>…
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  pairedBootstrap,
  pairedDifferences,
  readPerQueryJsonl,
  recomputeFromPerQuery,
  type Evaluation,
  type MetricName,
} from '@bfe/eval';
import { z } from 'zod';
import { benchCommand, flag, parseCommand, positive, runScript } from '../shared/cli.js';
import { note, out, printTable } from '../shared/table.js';
import { measureTokenColumns, TOKEN_K, type TokenFigures } from './table5-tokens.js';

const SYSTEMS = ['sparse-fusion', 'no-fusion'] as const;
const METRICS: MetricName[] = ['recall@10', 'ndcg@10'];

const indexMetaSchema = z.object({
  backend: z.string(),
  codec: z.string(),
  params: z.record(z.string(), z.union([z.number(), z.string()])),
  bytesPerToken: z.number(),
  totalBytes: z.number(),
  graph: z.string().optional(),
  floor: z.string().optional(),
});
const runResultsSchema = z.object({
  runs: z.array(z.object({ results: z.object({ meta: z.record(z.string(), z.unknown()) }) })),
});
const receiptSchema = z.object({
  stages: z.array(z.object({ name: z.string(), cached: z.boolean(), seconds: z.number() })),
});

interface Run {
  readonly dir: string;
  readonly index: z.infer<typeof indexMetaSchema> | undefined;
  readonly buildSeconds: number | undefined;
  readonly buildCached: boolean;
  readonly evaluations: Map<string, Evaluation>;
}

async function readRun(dir: string): Promise<Run> {
  const json = async (file: string): Promise<unknown> =>
    JSON.parse(await readFile(join(dir, file), 'utf8'));
  const results = runResultsSchema.parse(await json('results.json'));
  const rawIndex = results.runs[0]?.results.meta.index;
  const receipt = receiptSchema.parse(await json('receipt.json'));
  const stage = receipt.stages.find((s) => s.name === 'index');
  const lines = await readPerQueryJsonl(join(dir, 'per-query.jsonl'));
  return {
    dir,
    index: rawIndex === undefined ? undefined : indexMetaSchema.parse(rawIndex),
    buildSeconds: stage?.seconds,
    buildCached: stage?.cached ?? false,
    evaluations: recomputeFromPerQuery(
      lines.filter((l) => (SYSTEMS as readonly string[]).includes(l.system)),
      { ks: [10] },
    ),
  };
}

const pct = (x: number): string => (100 * x).toFixed(1);
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(1)}`;

function cell(run: Run, base: Run, system: string, metric: MetricName): string {
  const a = run.evaluations.get(system);
  const b = base.evaluations.get(system);
  if (a === undefined || b === undefined) throw new Error(`${run.dir}: no ${system} lines`);
  const value = pct(a.metrics[metric] ?? 0);
  if (run === base) return value;
  const boot = pairedBootstrap(pairedDifferences(a, b, metric), { resamples: 10_000, seed: 42 });
  return `${value} (${signed(boot.meanDiff)} [${signed(boot.ci95[0])}, ${signed(boot.ci95[1])}])`;
}

/** The exact fp32 row's storage (no index section): the bank's float32 token states. */
const fp32Cell = (t: TokenFigures | undefined, f: (t: TokenFigures) => string): string =>
  t === undefined ? '—' : f(t);

function tokenCells(t: TokenFigures): string[] {
  return [
    t.graphBytes === 0 ? '—' : (t.graphBytes / 1e6).toFixed(1),
    t.recall.toFixed(4),
    t.recallVsCodecExact === undefined ? '—' : t.recallVsCodecExact.toFixed(4),
    t.p50Ms.toFixed(1),
    t.p90Ms.toFixed(1),
  ];
}

/** `hnsw`, or with another graph kind, over-fetch or floor written: `hnsw i8 ×2`, `ivf warp floor`. */
function backendCell(ix: z.infer<typeof indexMetaSchema> | undefined): string {
  if (ix === undefined) return 'exact';
  const over = ix.params.overFetch;
  const floor = ix.floor === undefined ? undefined : `${ix.floor} floor`;
  return [ix.backend, ix.graph, over === undefined ? undefined : `×${over}`, floor]
    .filter((p) => p !== undefined)
    .join(' ');
}

interface Options {
  markdown?: boolean;
  threads?: number;
  inRam?: boolean;
}

const command = benchCommand('bench:table5', "the paper's Table 5 from bfe run folders")
  .argument('<base-run>', 'the exact fp32 run folder, the base of the paired differences')
  .argument('[runs...]', "each other row's run folder")
  .option('--markdown', 'print the table as Markdown')
  .addOption(flag('--threads <n>', 'onnxruntime threads of the token columns', positive))
  .option('--in-ram', 'token columns: states and codes read into memory, graphs loaded');

async function main(): Promise<void> {
  const { options, args: positionals } = parseCommand<Options>(command);
  const runs = await Promise.all(positionals.map(readRun));
  const base = runs[0]!;
  const tokens = await measureTokenColumns(positionals, {
    ...(options.threads === undefined ? {} : { threads: options.threads }),
    inRam: options.inRam === true,
    log: note,
  });
  const head = [
    'codec',
    'backend',
    'B/token',
    'total MB',
    'build s',
    'graph MB',
    'token R@64',
    'vs codec exact',
    'p50 ms',
    'p90 ms',
  ];
  for (const s of SYSTEMS) for (const m of METRICS) head.push(`${s} ${m.replace('recall', 'R')}`);
  const rows = runs.map((run, i) => {
    const ix = run.index;
    const build =
      run.buildSeconds === undefined
        ? '—'
        : `${run.buildSeconds.toFixed(1)}${run.buildCached ? ' (cached)' : ''}`;
    return [
      ix?.codec ?? 'fp32',
      backendCell(ix),
      ix === undefined
        ? fp32Cell(tokens[i], (t) => String(t.fp32Bytes / t.bankTokens))
        : String(ix.bytesPerToken),
      ix === undefined
        ? fp32Cell(tokens[i], (t) => (t.fp32Bytes / 1e6).toFixed(1))
        : (ix.totalBytes / 1e6).toFixed(1),
      build,
      ...tokenCells(tokens[i]!),
      ...SYSTEMS.flatMap((s) => METRICS.map((m) => cell(run, base, s, m))),
    ];
  });
  printTable(
    { head, align: head.map((_, c) => (c < 2 ? 'left' : 'right')), rows },
    { markdown: options.markdown },
  );
  out();
  out(`Δ vs ${base.dir} in points: mean [95% paired bootstrap CI], stratified by subtask.`);
  const load = (await readFile('/proc/loadavg', 'utf8').catch(() => '?')).trim();
  out(
    `Token columns: ${tokens[0]!.queries} queries, ${tokens[0]!.queryTokens} query tokens, k ${TOKEN_K}, load ${load}.`,
  );
}

await runScript('bench:table5', main);
