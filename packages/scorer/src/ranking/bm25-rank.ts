import { tieOrder } from '@bfe/index';
import { BM25_DEFAULTS, bm25BuildOptions, type Bm25Options } from '../bm25.js';
import type { CandidateGroup, MemoryCatalog, RankQuery } from './groups.js';
import { groupBm25 } from './hybrid.js';
import { checkTop, rankIds, type Rankings } from './sides.js';

/** Inputs of {@link rankBm25}. */
export interface RankBm25Input<Q extends RankQuery = RankQuery> {
  /** The memory rows' ids (they name the rankings and the tie order). */
  readonly memories: MemoryCatalog;
  /** Each memory row's text, aligned with `memories.ids`. */
  readonly memoryTexts: readonly string[];
  /** From `groupByCandidates`. */
  readonly groups: readonly CandidateGroup<Q>[];
  /** Memory ids kept per ranking. */
  readonly top: number;
  /** Language and IDF; default `BM25_DEFAULTS`. */
  readonly bm25?: Bm25Options;
  /** Another preparation under the same formula (`Bm25BuildOptions.tokenizer`); candidate IDF only. */
  readonly tokenizer?: (text: string) => string[];
}

/**
 * The `bm25` system alone, without an encoder or a token bank: one BM25 index per candidate
 * group, every query ranked over its candidates with ties in the seeded hash order of the
 * memory ids — the rankings `rankSystems` gives its `bm25` system for the same groups, texts
 * and options. Reads no labels.
 *
 * @throws Error when a group's query has no text.
 * @example
 * const groups = groupByCandidates({ ids, bankIds }, queries);
 * const runs = rankBm25({ memories: { ids, bankIds }, memoryTexts, groups, top: 50 });
 * runs.get('q1'); // ['m7', 'm2', …], at most 50 ids
 */
export function rankBm25<Q extends RankQuery>(input: RankBm25Input<Q>): Rankings {
  const { memories, memoryTexts, groups, top } = input;
  checkTop(top, 'rankBm25');
  const ties = tieOrder(memories.ids);
  const options = bm25BuildOptions(input.bm25 ?? BM25_DEFAULTS, memoryTexts);
  const build =
    input.tokenizer === undefined ? options : { ...options, tokenizer: input.tokenizer };
  const runs: Rankings = new Map();
  for (const group of groups) {
    const { scores } = groupBm25(group, memoryTexts, build);
    group.queries.forEach((q, i) => runs.set(q.id, rankIds(group.rows, scores[i]!, ties, top)));
  }
  return runs;
}
