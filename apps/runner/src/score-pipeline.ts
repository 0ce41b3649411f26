import { DataError, ArtifactCorruptError, benchmarkHash } from '@bfe/core';
import type { Benchmark, Query, RelevanceLabels } from '@bfe/core';
import type { OpenedBank } from '@bfe/encoder';
import { evaluate } from '@bfe/eval';
import type { Evaluation } from '@bfe/eval';
import { SparseScorer, bm25Scores, fuse, rankCandidates } from '@bfe/scorer';
import type { QueryScores, TokenBank } from '@bfe/scorer';

/** The systems `bfe score` reports, in table order (METHOD.md §6). */
export const SCORE_SYSTEMS = [
  'pooled',
  'maxsim',
  'bm25',
  'sparse-fusion',
  'zero-floor',
  'no-fusion',
] as const;
/** A system of the table: those of {@link SCORE_SYSTEMS}, plus `adapted` with an adapter. */
export type ScoreSystem = (typeof SCORE_SYSTEMS)[number] | 'adapted';

/** The systems of the k sweep: the ones whose scores depend on k. */
export const SWEEP_SYSTEMS = ['sparse-fusion', 'zero-floor', 'no-fusion'] as const;
type SweepSystem = (typeof SWEEP_SYSTEMS)[number];

/** One set of queries that rank the same candidate memories (LoCoMo: one conversation). */
export interface CandidateGroup {
  /** Memory rows of the bank, ascending (bank order decides ties). */
  readonly rows: Int32Array;
  /** Their ids, for the evaluator's candidate filter. */
  readonly ids: ReadonlySet<string>;
  readonly queries: Query[];
}

/** How the scorer runs: shared by {@link runScore} and {@link evaluateFusionGrid}. */
export interface ScorerSettings {
  /** onnxruntime intra-op threads (default: one per physical core). */
  readonly threads?: number;
  /** The scorer's onnxruntime execution provider (default `'cpu'`). */
  readonly executionProvider?: 'cpu' | 'webgpu';
  /** The scorer's kernel: onnxruntime (default) or the plain JavaScript reference. */
  readonly backend?: 'onnxruntime' | 'js';
}

function openScorer(settings: ScorerSettings): Promise<SparseScorer> {
  return SparseScorer.open({
    ...(settings.threads === undefined ? {} : { threads: settings.threads }),
    ...(settings.executionProvider === undefined
      ? {}
      : { executionProvider: settings.executionProvider }),
    ...(settings.backend === undefined ? {} : { kernel: settings.backend }),
  });
}

/**
 * The bank's two sides as the scorer takes them (`queryTokens` replaces the query content
 * tokens, e.g. by an adapter's output), and each query's bank row.
 */
function scorerSides(
  bank: OpenedBank,
  queryTokens?: Float32Array,
): { memories: TokenBank; queries: TokenBank; queryRows: (group: CandidateGroup) => Int32Array } {
  const model = bank.manifest.model.sha256;
  const queryRow = new Map(bank.queries.ids.map((id, row) => [id, row] as const));
  return {
    memories: { ...bank.memories, dim: bank.dim, model },
    queries: {
      ...bank.queries,
      ...(queryTokens === undefined ? {} : { tokenVectors: queryTokens }),
      dim: bank.dim,
      model,
    },
    queryRows: (group) =>
      Int32Array.from(group.queries, (q) => {
        const row = queryRow.get(q.id);
        if (row === undefined)
          throw new ArtifactCorruptError(`Query '${q.id}' is not in the bank.`);
        return row;
      }),
  };
}

/** Inputs of {@link runScore}. */
export interface ScoreRunInput extends ScorerSettings {
  readonly bank: OpenedBank;
  readonly benchmark: Benchmark;
  /** Read by the evaluator only. */
  readonly labels: RelevanceLabels;
  /** The queries to evaluate (one split's); undefined: all of the benchmark's. */
  readonly queryIds: ReadonlySet<string> | undefined;
  readonly k: number;
  readonly alpha: number;
  readonly ks: readonly number[];
  readonly kSweep: readonly number[];
  /**
   * The `adapted` system: sparse fusion at `alpha` with every query content token replaced by
   * the adapter's output (`queryTokens`, aligned with the bank's query tokens). The pooled
   * query, the memory tokens and the pooled memories are the bank's own (METHOD.md §4).
   */
  readonly adapted?: { readonly queryTokens: Float32Array; readonly alpha: number };
  readonly onProgress?: (done: number, total: number) => void;
}

/** One k of the sweep: the k-dependent systems' evaluations. */
export interface SweepPoint {
  readonly k: number;
  /** Candidate groups whose bank held fewer than k tokens (searched whole). */
  readonly clampedGroups: number;
  readonly systems: ReadonlyArray<{ readonly name: SweepSystem; readonly evaluation: Evaluation }>;
}

/** What {@link runScore} computed. */
export interface ScoreRun {
  readonly systems: ReadonlyArray<{ readonly name: ScoreSystem; readonly evaluation: Evaluation }>;
  readonly sweep: readonly SweepPoint[];
  readonly stats: {
    readonly queries: number;
    readonly groups: number;
    /** Groups searched whole at the main k because their bank held fewer tokens. */
    readonly clampedGroups: number;
    /** Queries without content tokens: every token system fell back to pooled. */
    readonly pooledOnlyQueries: number;
    /** Groups of 1–2 candidates, where BM25 used its direct engine (wink needs ≥ 3). */
    readonly bm25DirectGroups: number;
    readonly seconds: {
      readonly scoring: number;
      readonly bm25: number;
      readonly evaluation: number;
    };
  };
}

/**
 * Refuses a bank encoded from another benchmark (another dataset, other loader options or
 * other source files): its rows would not be this benchmark's memories and queries.
 *
 * @throws DataError naming both datasets and hashes.
 */
export function checkBankMatches(bank: OpenedBank, benchmark: Benchmark, bankDir: string): void {
  const hash = benchmarkHash(benchmark);
  if (bank.manifest.benchmarkHash === hash) return;
  throw new DataError(
    `The bank ${bankDir} was encoded from '${bank.manifest.dataset}' (benchmark hash ` +
      `${bank.manifest.benchmarkHash.slice(0, 12)}…), but the loaded dataset '${benchmark.name}' ` +
      `has benchmark hash ${hash.slice(0, 12)}…: they are not the same memories and queries.`,
    {
      suggestion:
        `Score with the dataset and --set options the bank was encoded with, or re-encode: ` +
        `bfe encode --dataset ${benchmark.name} --out <dir>.`,
    },
  );
}

/**
 * Resolves every selected query's candidates to bank rows and groups queries by identical
 * candidate sets. Queries are taken subtask by subtask in the benchmark's declared order, in
 * benchmark order within a subtask, so evaluations, per-query files and their recomputation
 * all sum and resample in one order.
 *
 * @throws ArtifactCorruptError when a memory or query of the benchmark is not in the bank.
 */
export function groupByCandidates(
  bank: OpenedBank,
  benchmark: Benchmark,
  queryIds: ReadonlySet<string> | undefined,
): CandidateGroup[] {
  const memoryRow = new Map<string, number>();
  bank.memories.ids.forEach((id, row) => memoryRow.set(id, row));
  const bankIds = bank.memories.bankIds;
  if (bankIds === undefined) throw new ArtifactCorruptError('memories.arrow has no bank_id');
  const rowsOfBank = new Map<string, number[]>();
  bankIds.forEach((b, row) => {
    const rows = rowsOfBank.get(b);
    if (rows === undefined) rowsOfBank.set(b, [row]);
    else rows.push(row);
  });
  const order = new Map(benchmark.subtasks.map((s, i) => [s, i]));
  const selected = benchmark.queries
    .filter((q) => queryIds === undefined || queryIds.has(q.id))
    .map((q, i) => ({ q, i }))
    .sort((a, b) => (order.get(a.q.category) ?? 0) - (order.get(b.q.category) ?? 0) || a.i - b.i)
    .map(({ q }) => q);

  const groups = new Map<string, { rows: Int32Array; queries: Query[] }>();
  for (const q of selected) {
    const rows: number[] = [];
    if (q.candidateBankIds !== undefined) {
      for (const b of q.candidateBankIds) rows.push(...(rowsOfBank.get(b) ?? []));
    } else {
      for (const id of q.candidateIds ?? []) {
        const row = memoryRow.get(id);
        if (row === undefined) {
          throw new ArtifactCorruptError(
            `Candidate memory '${id}' of query '${q.id}' is not in the bank.`,
          );
        }
        rows.push(row);
      }
    }
    const sorted = Int32Array.from(new Set(rows)).sort();
    if (sorted.length === 0) {
      throw new ArtifactCorruptError(`Query '${q.id}' has no candidate memory in the bank.`);
    }
    const key = sorted.join(',');
    const group = groups.get(key);
    if (group === undefined) groups.set(key, { rows: sorted, queries: [q] });
    else group.queries.push(q);
  }
  return [...groups.values()].map((g) => ({
    rows: g.rows,
    ids: new Set(Array.from(g.rows, (r) => bank.memories.ids[r] as string)),
    queries: g.queries,
  }));
}

/**
 * Scores, ranks and evaluates every system on exactly the same queries and candidates:
 * pooled, MaxSim, sparse fusion and its ablations from one `SparseScorer.score` call per
 * candidate group and k, BM25 from the same candidates' texts, then `@bfe/eval` on each.
 * Rankings are `rankCandidates` orders (ties: bank order), cut to the evaluator's top ranks.
 */
export async function runScore(input: ScoreRunInput): Promise<ScoreRun> {
  const { bank, benchmark, labels, ks, k, alpha } = input;
  const groups = groupByCandidates(bank, benchmark, input.queryIds);
  const memoryText = new Map(benchmark.memories.map((m) => [m.id, m.text]));
  const { memories, queries, queryRows } = scorerSides(bank);
  const keep = Math.max(50, ...ks);
  const sweepKs = [...new Set(input.kSweep)].filter((x) => x !== k);

  const systemNames: ScoreSystem[] = [
    ...SCORE_SYSTEMS,
    ...(input.adapted === undefined ? [] : (['adapted'] as const)),
  ];
  const runs = new Map<ScoreSystem, Map<string, string[]>>(systemNames.map((s) => [s, new Map()]));
  const sweepRuns = new Map<number, Map<SweepSystem, Map<string, string[]>>>(
    [k, ...sweepKs].map((x) => [x, new Map(SWEEP_SYSTEMS.map((s) => [s, new Map()]))]),
  );
  const clamped = new Map<number, number>([k, ...sweepKs].map((x) => [x, 0]));
  const candidates = new Map<string, ReadonlySet<string>>();
  const subtaskOf = new Map<string, string>();
  const ids = bank.memories.ids;
  const rank = (rows: Int32Array, scores: Float64Array): string[] =>
    (rankCandidates(rows, scores, ids).ids as string[]).slice(0, keep);
  let pooledOnly = 0;
  let scoringSeconds = 0;
  let bm25Seconds = 0;

  const scorer = await openScorer(input);
  try {
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g] as CandidateGroup;
      const rows = queryRows(group);
      for (const q of group.queries) {
        candidates.set(q.id, group.ids);
        subtaskOf.set(q.id, q.category);
      }
      const request = { memories, queries, queryRows: rows, candidates: group.rows };
      for (const kk of [k, ...sweepKs]) {
        const t0 = performance.now();
        const scored: QueryScores[] = await scorer.score(request, {
          k: kk,
          alpha,
          maxsim: kk === k,
          clampK: true,
        });
        scoringSeconds += (performance.now() - t0) / 1000;
        if ((scored[0] as QueryScores).k < kk) clamped.set(kk, (clamped.get(kk) as number) + 1);
        const perSystem = sweepRuns.get(kk) as Map<SweepSystem, Map<string, string[]>>;
        scored.forEach((s, i) => {
          const id = (group.queries[i] as Query).id;
          for (const name of SWEEP_SYSTEMS) {
            perSystem.get(name)?.set(id, rank(s.candidates, s.systems[name]));
          }
          if (kk !== k) return;
          if (s.pooledOnly) pooledOnly += 1;
          runs.get('pooled')?.set(id, rank(s.candidates, s.systems.pooled));
          const maxsim = s.systems.maxsim;
          if (maxsim === undefined) throw new Error('runScore: the scorer returned no MaxSim');
          runs.get('maxsim')?.set(id, rank(s.candidates, maxsim));
          for (const name of SWEEP_SYSTEMS)
            runs.get(name)?.set(id, perSystem.get(name)?.get(id) as string[]);
        });
      }
      if (input.adapted !== undefined) {
        const t1 = performance.now();
        const adaptedQueries: TokenBank = { ...queries, tokenVectors: input.adapted.queryTokens };
        const scored = await scorer.score(
          { ...request, queries: adaptedQueries },
          { k, alpha: input.adapted.alpha, maxsim: false, clampK: true },
        );
        scoringSeconds += (performance.now() - t1) / 1000;
        scored.forEach((s, i) =>
          runs
            .get('adapted')
            ?.set((group.queries[i] as Query).id, rank(s.candidates, s.systems['sparse-fusion'])),
        );
      }
      const t0 = performance.now();
      const texts = Array.from(group.rows, (r) => memoryText.get(ids[r] as string) ?? '');
      const bm25 = bm25Scores(
        texts,
        group.queries.map((q) => q.text),
      );
      group.queries.forEach((q, i) =>
        runs.get('bm25')?.set(q.id, rank(group.rows, bm25[i] as Float64Array)),
      );
      bm25Seconds += (performance.now() - t0) / 1000;
      input.onProgress?.(g + 1, groups.length);
    }
  } finally {
    await scorer.dispose();
  }

  const t0 = performance.now();
  const evaluateRuns = (r: Map<string, string[]>): Evaluation =>
    evaluate({
      runs: r,
      labels,
      candidates,
      subtaskOf,
      subtasks: benchmark.subtasks,
      ks,
      keepTop: keep,
    });
  const systems = systemNames.map((name) => ({
    name,
    evaluation: evaluateRuns(runs.get(name) as Map<string, string[]>),
  }));
  const byName = new Map(systems.map((s) => [s.name, s.evaluation]));
  const sweep = [...input.kSweep].map((kk) => ({
    k: kk,
    clampedGroups: clamped.get(kk) as number,
    systems: SWEEP_SYSTEMS.map((name) => ({
      name,
      evaluation:
        kk === k
          ? (byName.get(name) as Evaluation)
          : evaluateRuns(sweepRuns.get(kk)?.get(name) as Map<string, string[]>),
    })),
  }));
  return {
    systems,
    sweep,
    stats: {
      queries: subtaskOf.size,
      groups: groups.length,
      clampedGroups: clamped.get(k) as number,
      pooledOnlyQueries: pooledOnly,
      bm25DirectGroups: groups.filter((g) => g.rows.length < 3).length,
      seconds: {
        scoring: scoringSeconds,
        bm25: bm25Seconds,
        evaluation: (performance.now() - t0) / 1000,
      },
    },
  };
}

/** Inputs of {@link evaluateFusionGrid}. */
export interface FusionGridInput extends ScorerSettings {
  readonly bank: OpenedBank;
  readonly benchmark: Benchmark;
  /** Read by the evaluator only. */
  readonly labels: RelevanceLabels;
  readonly queryIds: ReadonlySet<string>;
  readonly k: number;
  readonly alphas: readonly number[];
  readonly ks: readonly number[];
  /** Query content tokens to use instead of the bank's (an adapter's output), same layout. */
  readonly queryTokens?: Float32Array;
}

/**
 * Sparse fusion at several α from one sparse search: each query's sparse and pooled branches
 * are computed once (exact top-k, tail floor), then fused and ranked per α and evaluated. Used
 * to select an adapter's epoch and α on validation queries (METHOD.md §4).
 */
export async function evaluateFusionGrid(input: FusionGridInput): Promise<Map<number, Evaluation>> {
  const { bank, benchmark, labels, k, alphas, ks } = input;
  const groups = groupByCandidates(bank, benchmark, input.queryIds);
  const { memories, queries, queryRows } = scorerSides(bank, input.queryTokens);
  const keep = Math.max(50, ...ks);
  const ids = bank.memories.ids;
  const runs = new Map(alphas.map((a) => [a, new Map<string, string[]>()]));
  const candidates = new Map<string, ReadonlySet<string>>();
  const subtaskOf = new Map<string, string>();
  const scorer = await openScorer(input);
  try {
    for (const group of groups) {
      const scored = await scorer.score(
        { memories, queries, queryRows: queryRows(group), candidates: group.rows },
        { k, maxsim: false, clampK: true },
      );
      scored.forEach((s, i) => {
        const q = group.queries[i] as Query;
        candidates.set(q.id, group.ids);
        subtaskOf.set(q.id, q.category);
        for (const alpha of alphas) {
          const fused = s.pooledOnly ? s.systems.pooled : fuse(s.systems.pooled, s.sparse, alpha);
          runs
            .get(alpha)
            ?.set(q.id, (rankCandidates(s.candidates, fused, ids).ids as string[]).slice(0, keep));
        }
      });
    }
  } finally {
    await scorer.dispose();
  }
  return new Map(
    alphas.map((alpha) => [
      alpha,
      evaluate({
        runs: runs.get(alpha) as Map<string, string[]>,
        labels,
        candidates,
        subtaskOf,
        subtasks: benchmark.subtasks,
        ks,
        keepTop: keep,
      }),
    ]),
  );
}
