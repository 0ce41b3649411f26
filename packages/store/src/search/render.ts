import { terminalTableLines } from '@bfe/core';
import type { EvidenceToken, SearchEvidence, SearchResult } from './search.js';

/** `'##ing'`, or `#id` when the search had no `tokenText`; `—` for none. */
function pieceOf(piece: string | undefined, id: number): string {
  if (id < 0) return '—';
  return piece ?? `#${id}`;
}

function fixed(x: number, digits = 3): string {
  return Number.isNaN(x) ? '—' : x.toFixed(digits);
}

function tokenRow(t: EvidenceToken): string[] {
  const best =
    t.floored && t.best !== undefined
      ? `(best ${pieceOf(t.bestPiece, t.bestTokenId)} ${fixed(t.best.similarity)}, unused)`
      : '';
  return [
    pieceOf(t.queryPiece, t.queryTokenId),
    '→',
    t.floored ? `floor t=${fixed(t.floor)}` : pieceOf(t.memoryPiece, t.memoryTokenId),
    fixed(t.similarity),
    t.floored ? '*' : '',
    `${(t.share * 100).toFixed(1)}%`,
    best,
  ];
}

/** The fused parts of a header: hybrid's three, or α·z(pooled) + (1−α)·z(sparse). */
function fusedParts(e: SearchEvidence): string {
  const b = e.bm25;
  if (b !== undefined) {
    const w = b.weights;
    return ` = ${fixed(w.pooled, 2)}·z(pooled) ${fixed(e.pooledPart)} + ${fixed(w.sparse, 2)}·z(sparse) ${fixed(e.sparsePart)} + ${fixed(w.bm25, 2)}·z(bm25) ${fixed(b.part)}`;
  }
  if (e.tokens.length === 0 && e.sparsePart === 0) return ' (pooled cosine)';
  return ` = ${fixed(e.alpha, 2)}·z(pooled) ${fixed(e.pooledPart)} + ${fixed(1 - e.alpha, 2)}·z(sparse) ${fixed(e.sparsePart)}`;
}

/** Hybrid's BM25 line: the memory's score and the query terms it holds. */
function bm25Line(e: SearchEvidence): string | undefined {
  const b = e.bm25;
  if (b === undefined) return undefined;
  const terms = b.terms.map((t) => `${t.term}×${t.queryCount} tf ${t.tf} idf ${fixed(t.idf)}`);
  return `  bm25 ${fixed(b.score)}: ${terms.length === 0 ? 'no query term' : terms.join(', ')}`;
}

/**
 * Search results with their token evidence as plain text for a terminal: per result a header
 * (rank, id, score and its fused parts), for `hybrid` a BM25 line (the query terms the memory
 * holds), and a compact table, one line per query token:
 * query token → memory token, similarity, `*` where the memory got the floor `t_i` instead of
 * a match (with its true best, which the score does not use), and the token's share of the
 * token-level score.
 *
 * @example
 * console.log(renderEvidence(await searchView(view, query, { k: 3, tokenText }, scorer)));
 * // #1 conv-1:D3:4  score 1.932 = 0.5·z(pooled) 0.781 + 0.5·z(sparse) 1.151  (pooled 0.612, sparse 0.583)
 * //   hiking  →  hike  0.812     14.2%
 * //   caroline → floor t=0.401  —  *  9.1%  (best caroline 0.388, unused)
 */
export function renderEvidence(results: readonly SearchResult[]): string {
  const out: string[] = [];
  for (const r of results) {
    const e = r.evidence;
    const parts = e === undefined ? '' : fusedParts(e);
    out.push(
      `#${r.rank} ${r.id}  score ${fixed(r.score)}${parts}  (pooled ${fixed(r.pooled)}, sparse ${fixed(r.sparse)})`,
    );
    if (e === undefined) continue;
    const lexical = bm25Line(e);
    if (lexical !== undefined) out.push(lexical);
    if (e.tokens.length === 0) {
      out.push(
        e.nQueryTokens === 0 ? '  (the query has no content tokens)' : '  (no token evidence)',
      );
      continue;
    }
    for (const line of terminalTableLines({
      head: [],
      rows: e.tokens.map(tokenRow),
      headless: true,
    }))
      out.push(`  ${line}`);
  }
  return out.join('\n');
}
