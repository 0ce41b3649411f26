import type { MemoryEvidence, TokenEvidence } from '@bfe/scorer';
import type { Bm25Evidence } from './search-hybrid.js';
import type { SearchSystem } from './systems.js';
import type { BankView, EncodedTexts } from '../types.js';

/** One query token's evidence, with the vocabulary pieces when `tokenText` was given. */
export interface EvidenceToken extends TokenEvidence {
  /** Vocabulary id of the query token. */
  readonly queryTokenId: number;
  readonly queryPiece: string | undefined;
  /** Vocabulary id of the matched memory token; -1 when floored. */
  readonly memoryTokenId: number;
  readonly memoryPiece: string | undefined;
  /** Vocabulary id of the diagnostic best token (not used by the score); -1 for none. */
  readonly bestTokenId: number;
  readonly bestPiece: string | undefined;
}

/**
 * Why a memory was returned: the scorer's {@link MemoryEvidence} with token pieces, without the
 * scorer's positions in the searched view (`candidate`, `memoryRow`: internal, and changed by
 * any write). The same over HTTP (`wire.ts`).
 */
export interface SearchEvidence extends Omit<MemoryEvidence, 'tokens' | 'candidate' | 'memoryRow'> {
  readonly system: SearchSystem;
  readonly tokens: readonly EvidenceToken[];
  /**
   * `hybrid` only: the BM25 branch (score, z, part, the query terms it matched); then `alpha`
   * is the pooled weight, `sparsePart` `w.sparse·z(sparse)`, and
   * `pooledPart + sparsePart + bm25.part = score`.
   */
  readonly bm25?: Bm25Evidence;
}

/**
 * A result's evidence as the caller sees it: the scorer's {@link MemoryEvidence} with the
 * vocabulary pieces of every matched token (`opts.tokenText`), and without the scorer's rows.
 */
export function withPieces(
  e: MemoryEvidence & { readonly bm25?: Bm25Evidence },
  opts: {
    readonly tokenText?: ((id: number) => string) | undefined;
    readonly system: SearchSystem;
  },
  view: BankView,
  query: EncodedTexts,
): SearchEvidence {
  const { memoryRow } = e;
  const tokenText = opts.tokenText;
  const piece = (id: number): string | undefined =>
    id < 0 || tokenText === undefined ? undefined : tokenText(id);
  const start = view.tokenOffsets[memoryRow]!;
  const q0 = query.tokenOffsets[0]!;
  // Built field by field (no object spread: this runs for every token of every result).
  const tokens = e.tokens.map((t): EvidenceToken => {
    const queryTokenId = query.tokenIds[q0 + t.queryToken]!;
    const memoryTokenId = t.memoryToken < 0 ? -1 : view.tokenIds[start + t.memoryToken]!;
    const bestId = t.best === undefined ? -1 : view.tokenIds[start + t.best.memoryToken]!;
    return {
      queryToken: t.queryToken,
      memoryToken: t.memoryToken,
      similarity: t.similarity,
      floored: t.floored,
      floor: t.floor,
      best: t.best,
      contribution: t.contribution,
      share: t.share,
      queryTokenId,
      queryPiece: piece(queryTokenId),
      memoryTokenId,
      memoryPiece: piece(memoryTokenId),
      bestTokenId: bestId,
      bestPiece: piece(bestId),
    };
  });
  // `+ 0` turns −0 (a branch of weight 0 times a negative z) into 0, which is what JSON can
  // carry: the same evidence in process and over HTTP (wire.ts).
  return {
    matching: e.matching,
    nQueryTokens: e.nQueryTokens,
    k: e.k,
    pooled: e.pooled,
    sparse: e.sparse,
    zPooled: e.zPooled + 0,
    zSparse: e.zSparse + 0,
    alpha: e.alpha,
    pooledPart: e.pooledPart + 0,
    sparsePart: e.sparsePart + 0,
    score: e.score + 0,
    system: opts.system,
    tokens,
    ...(e.bm25 === undefined ? {} : { bm25: e.bm25 }),
  };
}
