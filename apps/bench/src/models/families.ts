/**
 * Two encoder families side by side from two `bfe run` folders of the same experiment on the
 * same queries (e.g. `locomo-minilm` and `locomo-e5`): for every system of the main tables
 * (pooled, maxsim, sparse-fusion, no-fusion, adapted, plus whatever else both runs hold), R@10 and
 * NDCG@10 of each family, each family's gain over its own pooled vector, and the paired
 * difference between the families — mean and 95% bootstrap CI over queries, stratified by
 * subtask, with the sign-flip p (@bfe/eval's `comparePaired`, 10,000 resamples, seed 42), from
 * each run's per-query.jsonl. The paper's cross-backbone claim is the "vs pooled" columns: token
 * evidence helps in both families.
 *
 * node --conditions=@bfe/source --import tsx apps/bench/src/models/families.ts [--markdown]
 *   <run-A> <run-B>
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { terminalTableLines } from '@bfe/core';
import {
  comparePaired,
  readPerQueryJsonl,
  recomputeFromPerQuery,
  type Evaluation,
  type MetricName,
  type PairedDifference,
} from '@bfe/eval';

const METRICS: MetricName[] = ['recall@10', 'ndcg@10'];
const ORDER = ['pooled', 'maxsim', 'bm25', 'sparse-fusion', 'zero-floor', 'no-fusion', 'adapted'];
const runSchema = z.object({
  runs: z.array(
    z.object({ results: z.object({ meta: z.record(z.string(), z.unknown()).optional() }) }),
  ),
});

interface Run {
  readonly dir: string;
  readonly model: string;
  readonly evaluations: Map<string, Evaluation>;
}

async function readRun(dir: string): Promise<Run> {
  const results = runSchema.parse(JSON.parse(await readFile(join(dir, 'results.json'), 'utf8')));
  const meta = results.runs[0]?.results.meta ?? {};
  const named = z.object({ name: z.string() }).safeParse(meta.model);
  const model = named.success ? named.data.name : String(meta.model ?? dir);
  const lines = await readPerQueryJsonl(join(dir, 'per-query.jsonl'));
  return { dir, model, evaluations: recomputeFromPerQuery(lines, { ks: [10] }) };
}

const pts = (x: number): string => (100 * x).toFixed(1);
const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(1)}`;
const diff = (d: PairedDifference | undefined): string =>
  d === undefined
    ? '—'
    : `${signed(d.meanDiff)} [${signed(d.ci95[0])}, ${signed(d.ci95[1])}] p ${d.pValue < 0.001 ? '< 0.001' : d.pValue.toFixed(3)}`;

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: { markdown: { type: 'boolean', default: false } },
    allowPositionals: true,
  });
  if (positionals.length !== 2) throw new Error('give two run folders: <run-A> <run-B>');
  const [a, b] = await Promise.all(positionals.map(readRun));
  if (a === undefined || b === undefined) throw new Error('unreachable');
  const systems = ORDER.filter((s) => a.evaluations.has(s) && b.evaluations.has(s));
  const options = { metrics: METRICS, resamples: 10_000, seed: 42 };
  const rows = systems.map((s) => {
    const ea = a.evaluations.get(s)!;
    const eb = b.evaluations.get(s)!;
    const across = comparePaired(eb, ea, options);
    const gain = (run: Run, e: Evaluation) =>
      s === 'pooled' ? undefined : comparePaired(e, run.evaluations.get('pooled')!, options);
    const ga = gain(a, ea);
    const gb = gain(b, eb);
    return [
      s,
      ...METRICS.map((m) => pts(ea.metrics[m] ?? NaN)),
      ...METRICS.map((m) => pts(eb.metrics[m] ?? NaN)),
      ...METRICS.map((m) => diff(ga?.[m])),
      ...METRICS.map((m) => diff(gb?.[m])),
      ...METRICS.map((m) => diff(across[m])),
    ];
  });
  const head = [
    'system',
    'A R@10',
    'A NDCG@10',
    'B R@10',
    'B NDCG@10',
    'A vs pooled R@10',
    'A vs pooled NDCG@10',
    'B vs pooled R@10',
    'B vs pooled NDCG@10',
    'B − A R@10',
    'B − A NDCG@10',
  ];
  const table = terminalTableLines({
    head,
    align: head.map((_, c) => (c === 0 ? 'left' : 'right')),
    rows,
    style: values.markdown ? 'markdown' : 'plain',
  });
  const n = a.evaluations.get('pooled')?.queries.length ?? 0;
  process.stdout.write(
    `${table.join('\n')}\n\nA = ${a.dir} (${a.model}), B = ${b.dir} (${b.model}); ${n} queries; points; mean [95% paired bootstrap CI] and sign-flip p, stratified by subtask, 10,000 resamples, seed 42.\n`,
  );
}

await main();
