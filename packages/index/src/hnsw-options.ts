/** {@link HnswTokenIndex}'s side and options, and how many proposals a search asks each graph for. */
import type { CodecSide } from './codec-index.js';
import type { CodecName } from './codecs/model.js';
import type { HnswOptions, HnswScalarKind } from './hnsw/hnsw.js';
import type { SimilarityKernel } from './kernel.js';

/**
 * Proposals fetched per query row beyond `k` from the graph by default, all rescored in float64
 * ({@link HnswTokenIndexOptions.margin}).
 */
export const HNSW_MARGIN = 16;

/**
 * The cheapest usearch scalar kind that matches a codec, the kind {@link HnswTokenIndex} stores
 * its graph vectors in: fp32 → f32, fp16 → f16 (the decoded halves, exactly), sq8 / sq4 /
 * rp128+sq4 → i8 (usearch has no 4-bit kind: the graph holds usearch's int8 cast of the decoded
 * codec values, 128-dimensional for rp128+sq4).
 */
export function graphKindOf(codec: CodecName): HnswScalarKind {
  return codec === 'fp32' ? 'f32' : codec === 'fp16' ? 'f16' : 'i8';
}

/** The memory side of an HNSW index: the codec side plus the graph layout. */
export interface HnswSide extends CodecSide {
  /**
   * `[memories]` the bank (conversation, session, user) of each memory row: one graph per
   * bank when there are no `candidateSets`. Without either, one graph over every token.
   */
  readonly memoryBank?: Int32Array;
  /**
   * The candidate sets searches will ask for (memory rows, ascending; e.g. one per LongMemEval
   * haystack, one per LoCoMo conversation): one graph per set, a token in several sets in each
   * of their graphs. Takes precedence over `memoryBank`.
   */
  readonly candidateSets?: readonly Int32Array[];
}

/** Options of {@link HnswTokenIndex.build} and {@link HnswTokenIndex.load}. */
export interface HnswTokenIndexOptions extends HnswOptions {
  /** An exact kernel: lets `bestPerMemory` (MaxSim) run exhaustively over the same codes. */
  readonly kernel?: SimilarityKernel;
  /**
   * Over-fetch: each graph proposes `ceil(overFetch · k) + HNSW_MARGIN` tokens per query row
   * (default 1: `k + HNSW_MARGIN`), all rescored exactly; a cheaper graph kind (i8) buys back
   * the proposals its coarser ranking misses. usearch searches with `max(efSearch, proposals)`.
   */
  readonly overFetch?: number;
  /**
   * Proposals per query row and graph beyond `ceil(overFetch · k)` (default
   * {@link HNSW_MARGIN}, 16; an integer ≥ 1). The margin lets the rescoring reorder the
   * graph's ranking at the k-th place, and at least one proposal beyond `k` is needed to tell a
   * tie at the k-th place that may run past the proposals (searched exhaustively) from the end
   * of the proposals. 1 asks for `k + 1` per row, so usearch searches at `max(efSearch, k + 1)`
   * (its search width is at least the count asked for): a cheaper, lower-recall operating point
   * where the bank has no exact duplicates. Where it has (repeated text, coarse codes: 2e6 real
   * MiniLM states in sq8), ties at the last proposal are common at small margins, and each such
   * row is searched exhaustively over its candidates (`widenedRows`): margin 1 widened 4.7 % of
   * the rows there, seconds per query; margin 16 none.
   */
  readonly margin?: number;
  /**
   * {@link HnswTokenIndex.load} with `view`: how many memory-mapped graphs stay open at once
   * (default `DEFAULT_OPEN_GRAPHS`, 8); a graph is mapped when a search first needs it and the
   * least recently used one beyond this count is unmapped, so resident memory stays bounded by a
   * few graphs, not the whole index.
   */
  readonly openGraphs?: number;
}

/**
 * Proposals per query row and graph for `k`: `ceil(overFetch · k) + margin` (see
 * {@link HnswTokenIndexOptions.overFetch} and {@link HnswTokenIndexOptions.margin}).
 */
export function proposalsFor(k: number, overFetch = 1, margin = HNSW_MARGIN): number {
  if (!(overFetch >= 1)) throw new Error(`overFetch must be ≥ 1, got ${overFetch}.`);
  if (!(Number.isInteger(margin) && margin >= 1)) {
    throw new Error(`margin must be an integer ≥ 1, got ${margin}.`);
  }
  return Math.ceil(overFetch * k) + margin;
}
