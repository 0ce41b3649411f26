import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, DataError } from '@bfe/core';
import { tieOrder } from '@bfe/index';
import { SparseScorer } from '@bfe/scorer';
import { searchViewWithInterventions, type SearchOptions } from './search.js';
import { randomQuery, randomView } from '../testing/random-view.js';
import type { BankView, EncodedTexts } from '../types.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 12;
const ROWS = 30;

const view = (seed: number): BankView =>
  randomView(seed, { rows: ROWS, maxTokens: 8, dim: DIM, versioned: true });
const query = (seed: number, tokens: number): EncodedTexts => randomQuery(seed, tokens, DIM);

const tokenText = (id: number): string => `tok${id}`;
const v = view(5);
const ties = tieOrder(v.ids);
const row = (id: string): number => v.ids.indexOf(id);
const q = query(6, 6);
const run = (options: SearchOptions) =>
  searchViewWithInterventions(v, q, { tokenText, tokenK: 8, ...options }, scorer);

describe('searchViewWithInterventions', () => {
  it.each([
    ['sparse-fusion', 0.5],
    ['no-fusion', 0],
    ['zero-floor', 0.5],
  ] as const)(
    '%s: ranks after removals match a reference from the evidence of every memory',
    async (system, alpha) => {
      // Every memory's score, token-level score and evidence: the reference's inputs.
      const all = await run({ system, k: ROWS });
      const sparse = all.results.map((r) => r.sparse);
      const mean = sparse.reduce((a, b) => a + b, 0) / ROWS;
      const sd = Math.sqrt(sparse.reduce((a, b) => a + (b - mean) ** 2, 0) / ROWS);
      for (const memory of ['m3', 'm17', all.results[0]!.id]) {
        const { interventions: iv } = await run({
          system,
          k: 3,
          interventions: { memory, removeTop: 3, tokens: ['#1'] },
        });
        const own = all.results.find((r) => r.id === memory)!;
        expect([iv!.id, iv!.rank, iv!.score]).toEqual([memory, own.rank, own.score]);
        // Excess from the evidence: each token's contribution less its floor's share.
        const nq = own.evidence!.nQueryTokens;
        const excess = own.evidence!.tokens.map((t) => t.contribution - t.floor / nq);
        iv!.tokens.forEach((t, i) => expect(t.excess).toBeCloseTo(excess[i]!, 12));
        for (const r of iv!.removals) {
          const dropped = r.removed.reduce((s, i) => s + excess[i]!, 0);
          const score = own.score - ((1 - alpha) * dropped) / Math.max(sd, 1e-6);
          // Equal scores (memories left with only floors) rank by the tie order.
          const above = all.results.filter(
            (x) =>
              x.id !== memory &&
              (x.score > score + 1e-9 ||
                (Math.abs(x.score - score) <= 1e-9 &&
                  ties.rank[row(x.id)]! < ties.rank[row(memory)]!)),
          ).length;
          expect(r.score).toBeCloseTo(score, 9);
          expect(r.rank).toBe(above + 1);
        }
        expect(iv!.removals.map((r) => r.label)).toEqual([
          'top 1',
          'top 2',
          'top 3',
          'tok2001 (#1)',
        ]);
      }
    },
  );

  it('names tokens, defaults to the top result, and leaves the results as searchView gives them', async () => {
    const plain = await run({ k: 5 });
    const { results, interventions: iv } = await run({
      k: 5,
      interventions: { tokens: ['TOK2003'] },
    });
    expect(results).toEqual(plain.results);
    expect(plain.interventions).toBeUndefined();
    expect([iv!.id, iv!.rank]).toEqual([results[0]!.id, 1]);
    expect(iv!.removals).toHaveLength(7);
    expect(iv!.removals[6]).toMatchObject({ label: "'TOK2003'", removed: [3] });
    expect(iv!.tokens[0]!.queryPiece).toBe('tok2000');
    for (const t of iv!.tokens) {
      expect(t.memoryTokenId < 0).toBe(t.floored);
      if (!t.floored) expect(t.memoryPiece).toBe(`tok${t.memoryTokenId}`);
    }
  });

  it('refuses an unknown memory or token, and systems whose scores it cannot edit', async () => {
    await expect(run({ interventions: { memory: 'nope' } })).rejects.toThrow(DataError);
    await expect(run({ interventions: { tokens: ['zebra'] } })).rejects.toThrow(ConfigError);
    await expect(run({ system: 'pooled', interventions: {} })).rejects.toThrow(/interventions/);
    await expect(run({ interventions: { removeTop: 7 } })).rejects.toThrow(ConfigError);
  });
});
