import type { MemoryEvidence } from '@bfe/scorer';
import type { Bm25Evidence } from './search-hybrid.js';
import type { EvidenceToken, ResolvedSearchOptions, SearchEvidence } from './search.js';
import type { BankView, EncodedTexts } from '../types.js';

/**
 * A result's evidence as the caller sees it: the scorer's {@link MemoryEvidence} with the
 * vocabulary pieces of every matched token (`opts.tokenText`), and without the scorer's rows.
 */
export function withPieces(
  e: MemoryEvidence & { readonly bm25?: Bm25Evidence },
  opts: ResolvedSearchOptions,
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
