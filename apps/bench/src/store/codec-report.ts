/**
 * The figures of `bench:store --parts codecs` (codec-quality.ts): `@bfe/eval`'s evaluation of
 * each codec's rankings, Δ against the fp32 store with `comparePaired`, and the fp32 store beside
 * the experiment's own scored run (its per-query file, recomputed by `recomputeFromPerQuery`).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  comparePaired,
  evaluate,
  readPerQueryJsonl,
  recomputeFromPerQuery,
  type Evaluation,
  type PerQueryLine,
} from '@bfe/eval';
import type { CodecBenchmark } from './codec-banks.js';
import { CODEC_SYSTEMS, TOP, type CodecRun } from './codec-run.js';

const KS = [TOP];

/** `@bfe/eval`'s evaluation of `runs` on `b`'s queries (those of `only` when given). */
export function evaluateRuns(
  b: CodecBenchmark,
  runs: ReadonlyMap<string, readonly string[]>,
  only?: ReadonlySet<string>,
): Evaluation {
  const candidateSets = new Map<string, ReadonlySet<string>>();
  const candidates = new Map<string, ReadonlySet<string>>();
  const subtaskOf = new Map<string, string>();
  const kept = new Map<string, readonly string[]>();
  for (const q of b.queries) {
    if (only !== undefined && !only.has(q.id)) continue;
    let set = candidateSets.get(q.bank);
    if (set === undefined) candidateSets.set(q.bank, (set = new Set(b.banks.get(q.bank))));
    candidates.set(q.id, set);
    subtaskOf.set(q.id, q.subtask);
    kept.set(q.id, runs.get(q.id)!);
  }
  return evaluate({
    runs: kept,
    labels: b.labels,
    candidates,
    subtaskOf,
    subtasks: b.subtasks,
    ks: KS,
  });
}

/** The experiment's scored run: `dir` itself, or the run `dir/latest.json` names. */
export async function experimentLines(
  dir: string,
): Promise<{ run: string; lines: PerQueryLine[] }> {
  let run = dir;
  try {
    run = (JSON.parse(await readFile(join(dir, 'latest.json'), 'utf8')) as { runDir: string })
      .runDir;
  } catch {
    // a run folder given directly
  }
  const all = await readPerQueryJsonl(join(run, 'per-query.jsonl'));
  const systems = new Set<string>(CODEC_SYSTEMS);
  return { run, lines: all.filter((l) => systems.has(l.system)) };
}

const f4 = (x: number): string => x.toFixed(4);
const pts = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(100 * x).toFixed(2)}`;
const ci = (d: { meanDiff: number; ci95: readonly [number, number] }): string =>
  `${pts(d.meanDiff)} [${pts(d.ci95[0])}, ${pts(d.ci95[1])}]`;

export const CODEC_HEAD = [
  'dataset',
  'queries',
  'codec',
  'queries',
  'resident',
  'system',
  'R@10',
  'NDCG@10',
  'Δ R@10 vs fp32, pts [95% CI]',
  'Δ NDCG@10 vs fp32, pts [95% CI]',
  'banks-bootstrap Δ R@10 CI',
  'top 10 as fp32',
  'top 10 as fp32 resident',
  'segment bytes/token',
  'max |Δ| state',
  'add+flush s',
  'search s',
];

/** One row per codec and system; Δ against the run's fp32 store (when measured). */
export function codecRows(b: CodecBenchmark, runs: readonly CodecRun[]): string[][] {
  const rows: string[][] = [];
  const clusters = new Map(b.queries.map((q) => [q.id, q.bank]));
  const reference = runs.find(
    (r) => r.codec === 'fp32' && r.queries === 'replayed' && r.resident === 'fp32',
  );
  for (const system of CODEC_SYSTEMS) {
    const base = reference && evaluateRuns(b, reference.runs.get(system)!);
    for (const r of runs) {
      const e = evaluateRuns(b, r.runs.get(system)!);
      const d =
        base && r !== reference
          ? comparePaired(e, base, { metrics: ['recall@10', 'ndcg@10'], clusters })
          : undefined;
      const cluster = d?.['recall@10']?.cluster;
      const mine = r.runs.get(system)!;
      const same = reference && sameTop(mine, reference.runs.get(system)!);
      // An int8 resident run against its own store with float32 resident banks.
      const twin = runs.find(
        (o) => o.codec === r.codec && o.queries === r.queries && o.resident === 'fp32',
      );
      const sameResident =
        r.resident === 'fp32' || twin === undefined
          ? undefined
          : sameTop(mine, twin.runs.get(system)!);
      rows.push([
        b.name,
        String(e.nQueries),
        r.codec,
        r.queries,
        r.resident,
        system,
        f4(e.metrics['recall@10']!),
        f4(e.metrics['ndcg@10']!),
        d ? ci(d['recall@10']!) : '—',
        d ? ci(d['ndcg@10']!) : '—',
        cluster ? `[${pts(cluster.ci95[0])}, ${pts(cluster.ci95[1])}]` : '—',
        same === undefined ? '—' : `${same} / ${mine.size}`,
        sameResident === undefined ? '—' : `${sameResident} / ${mine.size}`,
        (r.segmentBytes / r.tokens).toFixed(0),
        r.maxDelta === 0 ? '0' : r.maxDelta.toExponential(2),
        r.addSeconds.toFixed(1),
        r.searchSeconds.toFixed(1),
      ]);
    }
  }
  return rows;
}

/** Queries whose top 10 is the same list, in the same order, in `a` and `b`. */
function sameTop(
  a: ReadonlyMap<string, readonly string[]>,
  b: ReadonlyMap<string, readonly string[]>,
): number {
  let same = 0;
  for (const [id, ids] of a) if (ids.join('\n') === b.get(id)?.join('\n')) same++;
  return same;
}

export const EXPERIMENT_HEAD = [
  'dataset',
  'experiment run',
  'system',
  'queries',
  'experiment R@10 / NDCG@10',
  'store fp32 R@10 / NDCG@10',
  'equal',
  'top 10 identical',
];

/**
 * The experiment's figures (recomputed by `@bfe/eval` from its per-query file) beside the fp32
 * store's on the same queries, and how many queries' top 10 are identical.
 */
export function experimentRows(
  b: CodecBenchmark,
  fp32: CodecRun,
  run: string,
  lines: readonly PerQueryLine[],
): string[][] {
  const asked = new Set(b.queries.map((q) => q.id));
  const rows: string[][] = [];
  for (const system of CODEC_SYSTEMS) {
    const own = lines.filter((l) => l.system === system && asked.has(l.queryId));
    if (own.length === 0) continue;
    const ids = new Set(own.map((l) => l.queryId));
    const exp = recomputeFromPerQuery(own, { ks: KS, subtasks: b.subtasks }).get(system)!;
    const store = evaluateRuns(b, fp32.runs.get(system)!, ids);
    const got = fp32.runs.get(system)!;
    const theirs = new Map(own.map((l) => [l.queryId, l.ranked.slice(0, TOP)]));
    const same = sameTop(theirs, got);
    const pair = (e: Evaluation) => `${f4(e.metrics['recall@10']!)} / ${f4(e.metrics['ndcg@10']!)}`;
    const equal =
      exp.metrics['recall@10'] === store.metrics['recall@10'] &&
      exp.metrics['ndcg@10'] === store.metrics['ndcg@10'];
    rows.push([
      b.name,
      run.split('/').slice(-2).join('/'),
      system,
      String(exp.nQueries),
      pair(exp),
      pair(store),
      equal ? 'yes (bit for bit)' : 'NO',
      `${same} / ${own.length}`,
    ]);
  }
  return rows;
}
