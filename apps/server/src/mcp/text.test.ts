import { describe, expect, it } from 'vitest';
import type { EvidenceJson, SearchResultJson } from '@bfe/store';
import { evidenceLine, idList, memories, memoryText, searchText } from './text.js';

const token = (
  queryPiece: string | null,
  memoryPiece: string | null,
  similarity: number | null,
  share: number,
): EvidenceJson['tokens'][number] => ({
  queryToken: 0,
  queryTokenId: 101,
  queryPiece,
  memoryToken: similarity === null ? -1 : 3,
  memoryTokenId: similarity === null ? -1 : 202,
  memoryPiece,
  similarity,
  floored: similarity === null,
  floor: 0.314,
  best: null,
  contribution: share / 2,
  share,
});

const evidence = (tokens: EvidenceJson['tokens']): EvidenceJson => ({
  system: 'sparse-fusion',
  matching: 'tail',
  nQueryTokens: tokens.length,
  k: 64,
  tokens,
  pooled: 0.6,
  sparse: 0.5,
  zPooled: 1,
  zSparse: 1,
  alpha: 0.5,
  pooledPart: 0.5,
  sparsePart: 0.5,
  score: 1,
});

describe('MCP text', () => {
  it('writes matched tokens with similarity and share, floored ones with their floor, unnamed pieces by id', () => {
    const line = evidenceLine(
      evidence([
        token('cat', 'cat', 0.9123, 0.614),
        token('what', null, null, 0.2),
        token(null, 'x', 0.5, 0.186),
      ]),
    );
    expect(line).toBe('evidence: cat→cat 0.91 61% · what→floor 0.31 20% · #101→x 0.50 19%');
    expect(evidenceLine({ ...evidence([]), nQueryTokens: 0 })).toBe(
      'evidence: the query has no content tokens',
    );
  });

  it('renders a search as a header, then per result its scores, text, metadata and evidence', () => {
    const result: SearchResultJson = {
      id: 'm1',
      rank: 1,
      score: 1.25,
      pooled: 0.6123,
      pooledRank: 2,
      sparse: 0.5,
      relevance: 0.8312,
      text: 'line one\nline two',
      meta: { source: 'chat' },
      evidence: evidence([token('cat', 'cat', 1, 1)]),
    };
    expect(searchText('alice', 'cat?', 'sparse-fusion', [result]).split('\n')).toEqual([
      '1 result from bank \'alice\' for "cat?" (sparse-fusion; score: fused, comparable within this search only; pooled: cosine; sparse: token evidence; relevance: calibrated 0–1, comparable across searches)',
      '#1 m1  score 1.250  pooled 0.612  sparse 0.500  relevance 0.831',
      '  line one',
      '  line two',
      '  meta: {"source":"chat"}',
      '  evidence: cat→cat 1.00 100%',
    ]);
    expect(searchText('alice', 'cat?', 'pooled', [])).toMatch(/^0 results from bank 'alice'/);
  });

  it('writes a memory with its metadata, and long id lists shortened', () => {
    expect(memoryText({ id: 'm1', bank: 'b', text: 'hello', meta: { a: 1 } })).toBe(
      'm1 in bank \'b\'\nmeta: {"a":1}\n\nhello',
    );
    expect(idList(['a', 'b', 'c'], 2)).toBe('a, b … (1 more)');
    expect([memories(1), memories(2)]).toEqual(['1 memory', '2 memories']);
  });
});
