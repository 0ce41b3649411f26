import type { EvidenceJson, SearchResultJson } from '@bfe/store';

/**
 * The MCP tools' text: what an assistant reads (the structured content carries the same
 * results in the search wire format). Compact: per search result one header line (rank, id,
 * fused score, pooled cosine, sparse evidence score), the memory's text, and one evidence line
 * (each query token → the memory token it matched, similarity, share of the sparse score; a
 * floored token shows the floor it got instead).
 */

const fixed = (x: number | null, digits = 3): string => (x === null ? '—' : x.toFixed(digits));

const indent = (text: string): string =>
  text
    .split('\n')
    .map((line) => `  ${line}`)
    .join('\n');

/** `#12` when the model names no piece. */
const piece = (p: string | null, id: number): string => p ?? `#${id}`;

/**
 * One line of token evidence, in query order.
 * @example
 * evidenceLine(evidence); // 'evidence: cat→cat 1.00 31% · name→called 0.42 12% · what→floor 0.21 9%'
 */
export function evidenceLine(e: EvidenceJson): string {
  if (e.tokens.length === 0)
    return e.nQueryTokens === 0
      ? 'evidence: the query has no content tokens'
      : 'evidence: none (pooled only)';
  const tokens = e.tokens.map((t) => {
    const share = `${(t.share * 100).toFixed(0)}%`;
    const q = piece(t.queryPiece, t.queryTokenId);
    return t.floored
      ? `${q}→floor ${fixed(t.floor, 2)} ${share}`
      : `${q}→${piece(t.memoryPiece, t.memoryTokenId)} ${fixed(t.similarity, 2)} ${share}`;
  });
  const bm25 =
    e.bm25 === undefined
      ? ''
      : `\nbm25 ${fixed(e.bm25.score)}: ${
          e.bm25.terms.length === 0
            ? 'no query term'
            : e.bm25.terms.map((t) => `${t.term} tf ${t.tf}`).join(', ')
        }`;
  return `evidence: ${tokens.join(' · ')}${bm25}`;
}

/**
 * A search's results as text.
 * @example
 * searchText('alice', 'cat name?', 'sparse-fusion', results);
 * // 1 result from bank 'alice' for "cat name?" (sparse-fusion) …
 * // #1 m1  score 1.000  pooled 0.612  sparse 0.583
 * //   Alice adopted a grey cat called Miso in May.
 * //   evidence: cat→cat 1.00 31% · name→called 0.42 12%
 */
export function searchText(
  bank: string,
  query: string,
  system: string,
  results: readonly SearchResultJson[],
): string {
  const head =
    `${results.length} result${results.length === 1 ? '' : 's'} from bank '${bank}' for ` +
    `${JSON.stringify(query)} (${system}; score: fused, comparable within this search only; ` +
    'pooled: cosine; sparse: token evidence; relevance: calibrated 0–1, comparable across searches)';
  if (results.length === 0) return head;
  const blocks = results.map((r) => {
    const lines = [
      `#${r.rank} ${r.id}  score ${fixed(r.score)}  pooled ${fixed(r.pooled)}  sparse ${fixed(r.sparse)}` +
        (r.relevance === undefined ? '' : `  relevance ${fixed(r.relevance)}`),
      indent(r.text),
    ];
    if (r.meta !== undefined) lines.push(`  meta: ${JSON.stringify(r.meta)}`);
    if (r.evidence !== undefined) lines.push(indent(evidenceLine(r.evidence)));
    return lines.join('\n');
  });
  return [head, ...blocks].join('\n');
}

/** A stored memory as text: its id and bank, its metadata, then its text. */
export function memoryText(m: {
  readonly id: string;
  readonly bank: string;
  readonly text: string;
  readonly meta?: Record<string, unknown>;
}): string {
  const meta = m.meta === undefined ? '' : `\nmeta: ${JSON.stringify(m.meta)}`;
  return `${m.id} in bank '${m.bank}'${meta}\n\n${m.text}`;
}

/** `'1 memory'`, `'2 memories'`. */
export const memories = (n: number): string => `${n} memor${n === 1 ? 'y' : 'ies'}`;

/** `'m1, m2'`, or the first few and a count. */
export function idList(ids: readonly string[], most = 20): string {
  if (ids.length <= most) return ids.join(', ');
  return `${ids.slice(0, most).join(', ')} … (${ids.length - most} more)`;
}
