import { DataError, ArtifactCorruptError, benchmarkHash } from '@bfe/core';
import type { Benchmark, Query, RelevanceLabels } from '@bfe/core';
import type { BankSide, FileBankSide, OpenedBank } from '@bfe/encoder';
import { fileTokenStore } from '@bfe/index';
import { evaluate } from '@bfe/eval';
import type { Evaluation } from '@bfe/eval';
import {
  SCORE_SYSTEMS,
  SWEEP_SYSTEMS,
  BM25_DEFAULTS,
  SparseScorer,
  chunkedPooledName,
  groupByCandidates as groupQueries,
  rankChunkedPooled,
  rankSystems,
} from '@bfe/scorer';
import type { SimilarityKernel, TokenIndex } from '@bfe/index';
import type {
  Bm25Options,
  CandidateGroup as ScorerCandidateGroup,
  ChunkedPooledSystem,
  RankSystemsInput,
  RankingSide,
  RankingSystem,
  Rankings,
  SweepSystem,
  TieCounts,
  WindowPools,
} from '@bfe/scorer';

/** The systems `bfe score` reports, in table order (METHOD.md §6); `@bfe/scorer`'s table. */
export { SCORE_SYSTEMS, SWEEP_SYSTEMS };
/**
 * A system of the table: those of {@link SCORE_SYSTEMS}, plus `adapted` and
 * `adapted-zero-floor` with an adapter, and `chunked-pooled@N` with window pools.
 */
export type ScoreSystem = RankingSystem | ChunkedPooledSystem;

/** One set of queries that rank the same candidate memories (LoCoMo: one conversation). */
export type CandidateGroup = ScorerCandidateGroup<Query>;

/** How the scorer runs: shared by {@link runScore} and `evaluateFusionGrids` (fusion-grid.ts). */
export interface ScorerSettings {
  /** onnxruntime intra-op threads (default: one per physical core). */
  readonly threads?: number;
  /** The scorer's onnxruntime execution provider (default `'cpu'`). */
  readonly executionProvider?: 'cpu' | 'webgpu';
  /** The scorer's kernel: onnxruntime (default) or the plain JavaScript reference. */
  readonly backend?: 'onnxruntime' | 'js';
  /**
   * Opens the token index every scorer pass proposes from (`ScoreRequest.index`), on the
   * scorer's kernel; undefined, or resolving to undefined: the exact float32 search.
   */
  readonly openIndex?: (kernel: SimilarityKernel) => Promise<OpenedTokenIndex | undefined>;
}

/** A token index opened for one scoring run, and how to release it. */
export interface OpenedTokenIndex {
  readonly index: TokenIndex;
  readonly dispose: () => void;
}

/** Bytes and `pread` calls a scoring run took from the memory token file. */
export interface TokenFileReads {
  bytes: number;
  reads: number;
}

/**
 * Runs `body` with the scorer, the bank's two sides (memory tokens possibly read from their
 * file, counted into `reads`) and, when asked for, the index; releases all three.
 */
export async function withScorer<T>(
  settings: ScorerSettings,
  bank: ScoreBank,
  body: (
    scorer: SparseScorer,
    sides: { memories: RankingSide; queries: RankingSide; index?: TokenIndex },
  ) => Promise<T>,
  reads?: TokenFileReads,
): Promise<T> {
  const { close, ...sides } = bankSides(bank, reads);
  let scorer: SparseScorer | undefined;
  let opened: OpenedTokenIndex | undefined;
  try {
    scorer = await openScorer(settings);
    opened = await settings.openIndex?.(scorer.kernel);
    return await body(scorer, opened === undefined ? sides : { ...sides, index: opened.index });
  } finally {
    opened?.dispose();
    await scorer?.dispose();
    close();
  }
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
 * A bank as scoring reads it: memory token vectors in memory, or left in their Arrow file
 * (`openBank(dir, { memoryTokens: 'file' })`, read through `@bfe/index`'s `fileTokenStore`).
 */
export type ScoreBank = OpenedBank<BankSide | FileBankSide>;

/**
 * The bank's two sides as the scorer's ranking takes them; `close` releases the memory token
 * file, if the tokens are read from one.
 */
function bankSides(
  bank: ScoreBank,
  reads: TokenFileReads | undefined,
): {
  memories: RankingSide;
  queries: RankingSide;
  close: () => void;
} {
  const model = bank.manifest.model.sha256;
  const queries = { ...bank.queries, dim: bank.dim, model };
  const m = bank.memories;
  if (!('tokenFile' in m))
    return { memories: { ...m, dim: bank.dim, model }, queries, close: () => {} };
  const { tokenFile, ...rest } = m;
  const tokens = fileTokenStore(tokenFile, reads === undefined ? {} : { stats: reads });
  return {
    memories: { ...rest, dim: bank.dim, model, tokens },
    queries,
    close: () => tokens.close(),
  };
}

/** Inputs of {@link runScore}. */
export interface ScoreRunInput extends ScorerSettings {
  readonly bank: ScoreBank;
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
   * `zeroFloor`: `adapted-zero-floor`'s own selected adapter output and α.
   */
  readonly adapted?: RankSystemsInput['adapted'];
  /** The `hybrid` (and `hybrid-selected`) systems' weights (METHOD.md §8); undefined: none. */
  readonly hybrid?: RankSystemsInput['hybrid'];
  /** BM25's language and IDF (`resolveBm25Options`); default `BM25_DEFAULTS`. */
  readonly bm25?: Bm25Options;
  /**
   * The `chunked-pooled@<size>` systems (the paper's Appendix D control): each size's window
   * pools, aligned with the bank's memory rows (`windowPools`), ranked after the others.
   */
  readonly chunkedPooled?: ReadonlyArray<{ readonly size: number; readonly pools: WindowPools }>;
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
  /**
   * Per system, in the order of `systems`: ranked positions within the top 10 decided by the
   * tie order (a seeded hash of the memory id), over every ranked query.
   */
  readonly ties: ReadonlyMap<ScoreSystem, TieCounts>;
  readonly sweep: readonly SweepPoint[];
  /** The BM25 options the `bm25` and hybrid systems ran with. */
  readonly bm25: Bm25Options;
  readonly stats: {
    readonly queries: number;
    readonly groups: number;
    /** Groups searched whole at the main k because their bank held fewer tokens. */
    readonly clampedGroups: number;
    /** Queries without content tokens: every token system fell back to pooled. */
    readonly pooledOnlyQueries: number;
    /** What was read from the memory token file; null: the bank's tokens were in memory. */
    readonly memoryTokenFile: Readonly<TokenFileReads> | null;
    readonly seconds: {
      readonly scoring: number;
      /** BM25 in all; `bm25Index` of it building the per-group indexes. */
      readonly bm25: number;
      readonly bm25Index: number;
      /** The hybrid systems' fusions and rankings (BM25 and the scorer pass counted above). */
      readonly hybrid: number;
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
export function checkBankMatches(bank: ScoreBank, benchmark: Benchmark, bankDir: string): void {
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
 * The selected queries (all of the benchmark's when `queryIds` is undefined), subtask by
 * subtask in the benchmark's declared order, by id within a subtask (never in file order), so
 * evaluations, per-query files and their recomputation all sum and resample in one order, and
 * the same queries in any file order give the same files.
 */
function orderedQueries(benchmark: Benchmark, queryIds: ReadonlySet<string> | undefined): Query[] {
  const order = new Map(benchmark.subtasks.map((s, i) => [s, i]));
  return benchmark.queries
    .filter((q) => queryIds === undefined || queryIds.has(q.id))
    .sort(
      (a, b) =>
        (order.get(a.category) ?? 0) - (order.get(b.category) ?? 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}

/**
 * Resolves every selected query's candidates to bank rows and groups queries by identical
 * candidate sets (`@bfe/scorer`'s `groupByCandidates`), queries in {@link orderedQueries} order.
 *
 * @throws ArtifactCorruptError when a memory or query of the benchmark is not in the bank.
 */
export function groupByCandidates(
  bank: ScoreBank,
  benchmark: Benchmark,
  queryIds: ReadonlySet<string> | undefined,
): CandidateGroup[] {
  if (bank.memories.bankIds === undefined) {
    throw new ArtifactCorruptError('memories.arrow has no bank_id');
  }
  return groupQueries(bank.memories, orderedQueries(benchmark, queryIds));
}

/** The evaluator's view of the groups: each query's candidate ids and subtask, in order. */
export function evaluationScope(groups: readonly CandidateGroup[]): {
  candidates: Map<string, ReadonlySet<string>>;
  subtaskOf: Map<string, string>;
} {
  const candidates = new Map<string, ReadonlySet<string>>();
  const subtaskOf = new Map<string, string>();
  for (const group of groups) {
    for (const q of group.queries) {
      candidates.set(q.id, group.ids);
      subtaskOf.set(q.id, q.category);
    }
  }
  return { candidates, subtaskOf };
}

/**
 * Evaluates rankings of the groups' queries against their own candidates (`@bfe/eval`'s
 * `evaluate`, ranks cut to `keepTop`): the one evaluator of the score run and the fusion grid.
 */
export function groupEvaluator(input: {
  readonly groups: readonly CandidateGroup[];
  readonly labels: RelevanceLabels;
  readonly subtasks: readonly string[];
  readonly ks: readonly number[];
  readonly keepTop: number;
}): (runs: Rankings) => Evaluation {
  const { candidates, subtaskOf } = evaluationScope(input.groups);
  const { labels, subtasks, ks, keepTop } = input;
  return (runs) => evaluate({ runs, labels, candidates, subtaskOf, subtasks, ks, keepTop });
}

/**
 * Ranks every system on exactly the same queries and candidates (`@bfe/scorer`'s
 * `rankSystems`: pooled, MaxSim, sparse fusion and its ablations, BM25, adapted and its
 * zero-floor ablation; the k sweep; exact ties by the seeded hash of the memory id, counted),
 * then evaluates each ranking with `@bfe/eval`. Rankings are cut to the evaluator's top ranks.
 */
export async function runScore(input: ScoreRunInput): Promise<ScoreRun> {
  const { bank, benchmark, labels, ks, k, alpha } = input;
  const groups = groupByCandidates(bank, benchmark, input.queryIds);
  const memoryText = new Map(benchmark.memories.map((m) => [m.id, m.text]));
  const bm25 = input.bm25 ?? BM25_DEFAULTS;
  const keep = Math.max(50, ...ks);
  const reads: TokenFileReads | null = 'tokenFile' in bank.memories ? { bytes: 0, reads: 0 } : null;
  const ranked = await withScorer(
    input,
    bank,
    (scorer, sides) =>
      rankSystems(scorer, {
        ...sides,
        memoryTexts: bank.memories.ids.map((id) => memoryText.get(id) ?? ''),
        groups,
        k,
        alpha,
        kSweep: input.kSweep,
        top: keep,
        ...(input.adapted === undefined ? {} : { adapted: input.adapted }),
        ...(input.hybrid === undefined ? {} : { hybrid: input.hybrid }),
        bm25,
        ...(input.onProgress === undefined ? {} : { onProgress: input.onProgress }),
      }),
    reads ?? undefined,
  );

  const t0 = performance.now();
  const evaluateRuns = groupEvaluator({
    groups,
    labels,
    subtasks: benchmark.subtasks,
    ks,
    keepTop: keep,
  });
  const chunked = (input.chunkedPooled ?? []).map(({ size, pools }) => ({
    name: chunkedPooledName(size),
    ...rankChunkedPooled({
      memories: bank.memories,
      queries: { ...bank.queries, dim: bank.dim },
      groups,
      pools,
      top: keep,
    }),
  }));
  const systems: Array<{ name: ScoreSystem; evaluation: Evaluation }> = [
    ...[...ranked.systems].map(([name, runs]) => ({ name, evaluation: evaluateRuns(runs) })),
    ...chunked.map((c) => ({ name: c.name, evaluation: evaluateRuns(c.rankings) })),
  ];
  const byName = new Map(systems.map((s) => [s.name, s.evaluation]));
  const sweep = [...input.kSweep].map((kk) => {
    const point = ranked.sweep.get(kk);
    if (point === undefined) throw new Error(`runScore: no rankings at k = ${kk}`);
    return {
      k: kk,
      clampedGroups: point.clampedGroups,
      systems: SWEEP_SYSTEMS.map((name) => ({
        name,
        evaluation:
          kk === k
            ? (byName.get(name) as Evaluation)
            : evaluateRuns(point.systems.get(name) as Rankings),
      })),
    };
  });
  const { stats } = ranked;
  return {
    systems,
    ties: new Map<ScoreSystem, TieCounts>([
      ...ranked.ties,
      ...chunked.map((c) => [c.name, c.ties] as const),
    ]),
    sweep,
    bm25,
    stats: {
      queries: groups.reduce((n, g) => n + g.queries.length, 0),
      groups: stats.groups,
      clampedGroups: stats.clampedGroups,
      pooledOnlyQueries: stats.pooledOnlyQueries,
      memoryTokenFile: reads,
      seconds: { ...stats.seconds, evaluation: (performance.now() - t0) / 1000 },
    },
  };
}
