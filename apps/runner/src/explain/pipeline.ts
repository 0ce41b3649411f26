import { ConfigError, type Benchmark, type Query, type RelevanceLabels } from '@bfe/core';
import {
  namedTokenRemovals,
  rankCandidates,
  summarizeInterventions,
  tieOrder,
  tokenInterventions,
  topExcessRemovals,
  type CandidateInterventions,
  type InterventionMatching,
  type InterventionSummaryRow,
  type QueryScores,
} from '@bfe/scorer';
import {
  groupByCandidates,
  withScorer,
  type ScoreBank,
  type ScorerSettings,
} from '../score/pipeline.js';

/** The systems whose token-level score an intervention can edit (METHOD.md §2–4). */
export const EXPLAIN_SYSTEMS = [
  'sparse-fusion',
  'no-fusion',
  'zero-floor',
  'adapted',
  'adapted-zero-floor',
] as const;
export type ExplainSystem = (typeof EXPLAIN_SYSTEMS)[number];

/** Inputs shared by {@link explainQuery} and {@link aggregateInterventions}. */
export interface ExplainRunInput extends ScorerSettings {
  readonly bank: ScoreBank;
  readonly benchmark: Benchmark;
  /**
   * Read only to pick which memory to analyse (the relevant one the system ranks highest), as
   * an evaluator reads them; never by any score.
   */
  readonly labels: RelevanceLabels;
  /** The evaluated queries (one split part's); undefined: every query. */
  readonly queryIds: ReadonlySet<string> | undefined;
  readonly system: ExplainSystem;
  readonly k: number;
  /** α of the training-free systems (`no-fusion` uses 0). */
  readonly alpha: number;
  /** The adapted systems' query tokens (aligned with the bank's) and their selected α. */
  readonly adapted?: { readonly queryTokens: Float32Array; readonly alpha: number };
}

/** How the system edits and fuses: its matching, α, and the adapter's query tokens if any. */
function systemSpec(input: ExplainRunInput): {
  matching: InterventionMatching;
  alpha: number;
  queryTokens: Float32Array | undefined;
} {
  const { system, adapted } = input;
  if (system === 'adapted' || system === 'adapted-zero-floor') {
    if (adapted === undefined) {
      throw new ConfigError(`the ${system} system needs an adapter (--adapter <adapt dir>)`);
    }
    const matching = system === 'adapted' ? 'tail' : 'zero';
    return { matching, alpha: adapted.alpha, queryTokens: adapted.queryTokens };
  }
  return {
    matching: system === 'zero-floor' ? 'zero' : 'tail',
    alpha: system === 'no-fusion' ? 0 : input.alpha,
    queryTokens: undefined,
  };
}

/** One scored query as the visitors below see it. */
interface ScoredQuery {
  readonly query: Query;
  readonly scores: QueryScores;
  /** Candidate positions in the system's ranking, best first (its own tie order). */
  readonly order: Int32Array;
  readonly intervene: (
    candidate: number,
    removals: readonly (readonly number[])[],
  ) => CandidateInterventions;
}

/** Scores the selected queries group by group (keeping hits) and visits each one. */
async function forEachScored(
  input: ExplainRunInput,
  queryIds: ReadonlySet<string> | undefined,
  visit: (q: ScoredQuery) => void,
  onProgress?: (done: number, total: number) => void,
): Promise<void> {
  const { bank, benchmark, k } = input;
  const spec = systemSpec(input);
  const groups = groupByCandidates(bank, benchmark, queryIds);
  const ties = tieOrder(bank.memories.ids);
  await withScorer(input, bank, async (scorer, sides) => {
    const queries =
      spec.queryTokens === undefined
        ? sides.queries
        : { ...sides.queries, tokenVectors: spec.queryTokens };
    const rowOf = new Map(sides.queries.ids.map((id, row) => [id, row] as const));
    for (const [gi, group] of groups.entries()) {
      const scored = await scorer.score(
        {
          memories: sides.memories,
          queries,
          queryRows: group.queries.map((q) => rowOf.get(q.id)!),
          candidates: group.rows,
          ...(sides.index === undefined ? {} : { index: sides.index }),
        },
        { k, alpha: spec.alpha, clampK: true, keepHits: true },
      );
      scored.forEach((scores, i) => {
        const fused = scores.systems[spec.matching === 'zero' ? 'zero-floor' : 'sparse-fusion'];
        // `no-fusion` is the same pass fused at α 0: the scorer's own array for it.
        const values =
          spec.alpha === 0 && spec.matching === 'tail' ? scores.systems['no-fusion'] : fused;
        const { order } = rankCandidates(scores.candidates, values, ties);
        visit({
          query: group.queries[i]!,
          scores,
          order,
          intervene: (candidate, removals) =>
            tokenInterventions(
              { scores, matching: spec.matching, alpha: spec.alpha, ties },
              candidate,
              removals,
            ),
        });
      });
      onProgress?.(gi + 1, groups.length);
    }
  });
}

/** The candidate position of the first relevant memory in the ranking; -1 for none. */
function firstRelevant(q: ScoredQuery, ids: readonly string[], labels: RelevanceLabels): number {
  const relevant = labels.relevant(q.query.id);
  if (relevant.size === 0) return -1;
  for (const g of q.order) if (relevant.has(ids[q.scores.candidates[g]!]!)) return g;
  return -1;
}

/** Options of {@link explainQuery}. */
export interface ExplainQueryOptions {
  readonly queryId: string;
  /** The memory to analyse; default: the highest-ranked relevant one, else the top-ranked one. */
  readonly memoryId?: string;
  /** Remove the top 1…`removeTop` excess contributions. */
  readonly removeTop: number;
  /**
   * Named removals (`--remove-token`): a token's text (every query token with that piece,
   * case-insensitive, `##` ignored) or `#i` (the i-th query content token, from 0).
   */
  readonly removeTokens?: readonly string[];
  /** The vocabulary piece of a token id (the bank's tokenizer). */
  readonly tokenText: (id: number) => string | undefined;
}

/** {@link explainQuery}'s result. */
export interface QueryExplanation {
  readonly query: Query;
  readonly memoryId: string;
  /** Why this memory: given, the highest-ranked relevant one, or the top one (no labels). */
  readonly chosen: 'given' | 'relevant' | 'top';
  readonly relevant: boolean;
  readonly candidates: number;
  /** The query's content token vocabulary ids. */
  readonly queryTokenIds: Int32Array;
  /** Vocabulary id of each token's matched memory token; -1 when floored. */
  readonly memoryTokenIds: Int32Array;
  readonly interventions: CandidateInterventions;
  /** What each outcome removed: `top n`, or the named token. */
  readonly labels: readonly string[];
}

/**
 * One query's token interventions on one memory (the paper's Appendix D worked example):
 * per query token its match and excess over the floor, then the memory's fused rank after
 * removing the top 1…n excess contributions and each named token.
 *
 * @throws ConfigError for a query that is not evaluated or a memory that is not its candidate.
 */
export async function explainQuery(
  input: ExplainRunInput,
  options: ExplainQueryOptions,
): Promise<QueryExplanation> {
  const { queryId } = options;
  if (input.queryIds !== undefined && !input.queryIds.has(queryId)) {
    throw new ConfigError(`query '${queryId}' is not in the selected split part`);
  }
  if (!input.benchmark.queries.some((q) => q.id === queryId)) {
    throw new ConfigError(`no query '${queryId}' in ${input.benchmark.name}`);
  }
  const { ids, tokenId } = input.bank.memories;
  const qs = input.bank.queries;
  let out: QueryExplanation | undefined;
  await forEachScored(input, new Set([queryId]), (q) => {
    let chosen: QueryExplanation['chosen'] = 'given';
    let g: number;
    if (options.memoryId !== undefined) {
      g = Array.from(q.scores.candidates).findIndex((row) => ids[row] === options.memoryId);
      if (g < 0) {
        throw new ConfigError(`memory '${options.memoryId}' is not a candidate of '${queryId}'`);
      }
    } else {
      g = firstRelevant(q, ids, input.labels);
      chosen = g >= 0 ? 'relevant' : 'top';
      if (g < 0) g = q.order[0]!;
    }
    const row = qs.ids.indexOf(queryId);
    const queryTokenIds = qs.tokenId.slice(qs.tokenOffsets[row]!, qs.tokenOffsets[row + 1]!);
    const first = q.intervene(g, []);
    const ns = Array.from({ length: options.removeTop }, (_, i) => i + 1);
    const pieces = Array.from(queryTokenIds, (id) => options.tokenText(id) ?? `[${id}]`);
    const named = namedTokenRemovals(options.removeTokens ?? [], pieces);
    const removals = [...topExcessRemovals(first.byExcess, ns), ...named.map((n) => n.tokens)];
    const interventions = q.intervene(g, removals);
    out = {
      query: q.query,
      memoryId: ids[q.scores.candidates[g]!]!,
      chosen,
      relevant: input.labels.relevant(queryId).has(ids[q.scores.candidates[g]!]!),
      candidates: q.scores.candidates.length,
      queryTokenIds,
      memoryTokenIds: Int32Array.from(interventions.tokens, (t) =>
        t.bankToken < 0 ? -1 : tokenId[t.bankToken]!,
      ),
      interventions,
      labels: [...ns.map((n) => `top ${n}`), ...named.map((n) => n.label)],
    };
  });
  if (out === undefined) throw new Error(`explainQuery: query '${queryId}' was not scored`);
  return out;
}

/** One analysed query of {@link aggregateInterventions}. */
export interface AggregateRecord {
  readonly queryId: string;
  readonly subtask: string;
  /** The query's place in the dataset's file order (for predeclared example rules). */
  readonly fileIndex: number;
  readonly memoryId: string;
  readonly before: number;
  readonly after: readonly number[];
}

/** {@link aggregateInterventions}' result. */
export interface AggregateInterventions {
  readonly removeTop: readonly number[];
  readonly rows: readonly InterventionSummaryRow[];
  readonly records: readonly AggregateRecord[];
  /** Evaluated queries without a relevant memory among their candidates (not analysed). */
  readonly dropped: number;
}

/**
 * The Appendix D interventions over a dataset: for each evaluated query with a relevant
 * memory among its candidates, the relevant memory the system ranks highest, its rank before
 * and after removing its top-n excess contributions, summarised per subtask and overall
 * (`summarizeInterventions`). Labels only pick the memory; deterministic.
 */
export async function aggregateInterventions(
  input: ExplainRunInput,
  removeTop: readonly number[],
  onProgress?: (done: number, total: number) => void,
): Promise<AggregateInterventions> {
  const fileIndex = new Map(input.benchmark.queries.map((q, i) => [q.id, i]));
  const ids = input.bank.memories.ids;
  const records: AggregateRecord[] = [];
  let dropped = 0;
  await forEachScored(
    input,
    input.queryIds,
    (q) => {
      const g = firstRelevant(q, ids, input.labels);
      if (g < 0) {
        dropped += 1;
        return;
      }
      const first = q.intervene(g, []);
      const r = q.intervene(g, topExcessRemovals(first.byExcess, removeTop));
      records.push({
        queryId: q.query.id,
        subtask: q.query.category,
        fileIndex: fileIndex.get(q.query.id)!,
        memoryId: ids[q.scores.candidates[g]!]!,
        before: r.rank,
        after: r.outcomes.map((o) => o.rank),
      });
    },
    onProgress,
  );
  return {
    removeTop,
    rows: summarizeInterventions(records, removeTop, input.benchmark.subtasks),
    records,
    dropped,
  };
}

/**
 * {@link QueryExplanation} as JSON (`--json`, `--out`): token pieces by text, NaN (a floored
 * token's similarity) as null.
 */
export function explanationJson(
  e: QueryExplanation,
  header: object,
  tokenText: (id: number) => string | undefined,
): Record<string, unknown> {
  const r = e.interventions;
  const piece = (id: number): string | null => (id < 0 ? null : (tokenText(id) ?? `[${id}]`));
  return {
    ...header,
    query: { id: e.query.id, subtask: e.query.category, text: e.query.text },
    memory: { id: e.memoryId, chosen: e.chosen, relevant: e.relevant },
    candidates: e.candidates,
    rank: r.rank,
    score: r.score,
    sparse: r.sparse,
    tokens: r.tokens.map((t, i) => ({
      queryToken: t.queryToken,
      text: piece(e.queryTokenIds[i]!),
      memoryText: piece(e.memoryTokenIds[i]!),
      similarity: t.floored ? null : t.similarity,
      floor: t.floor,
      floored: t.floored,
      excess: t.excess,
    })),
    removals: r.outcomes.map((o, j) => ({ label: e.labels[j], ...o })),
  };
}
