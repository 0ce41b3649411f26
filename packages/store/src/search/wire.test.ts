import { afterAll, describe, expect, it } from 'vitest';
import { SparseScorer } from '@bfe/scorer';
import { randomQuery, randomView } from '../testing/random-view.js';
import type { BankView, EncodedTexts } from '../types.js';
import { SEARCH_SYSTEMS, searchViewWithInterventions } from './search.js';
import {
  interventionsFromJson,
  interventionsToJson,
  searchResponseJsonSchema,
  searchResultFromJson,
  searchResultToJson,
} from './wire.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 12;
const ROWS = 30;

const view = (seed: number): BankView =>
  randomView(seed, {
    rows: ROWS,
    maxTokens: 8,
    dim: DIM,
    meta: (i) => (i % 2 === 0 ? { n: i, tags: ['x'] } : undefined),
    versioned: true,
  });
const query = (seed: number, tokens: number): EncodedTexts => randomQuery(seed, tokens, DIM);

/** What a client reads back: the JSON text a server writes, parsed and checked by the schema. */
function overTheWire(body: unknown) {
  return searchResponseJsonSchema.parse(JSON.parse(JSON.stringify(body)));
}

describe('the search wire format', () => {
  const v = view(11);
  const q = query(12, 7);

  it.each(SEARCH_SYSTEMS.map((s) => [s]))(
    '%s: JSON and back is the in-process result, evidence included (floors as NaN)',
    async (system) => {
      for (const tokenText of [(id: number) => `tok${id}`, undefined]) {
        const { results } = await searchViewWithInterventions(
          v,
          q,
          {
            system,
            k: ROWS,
            tokenK: 8,
            queryText: 'memory 3 and memory 3',
            ...(tokenText === undefined ? {} : { tokenText }),
          },
          scorer,
        );
        const back = overTheWire({ results: results.map(searchResultToJson) });
        expect(back.results.map(searchResultFromJson)).toStrictEqual(results);
        // hybrid's BM25 branch travels too (the query's words are in some memories).
        const bm25 = results.map((r) => r.evidence!.bm25);
        expect(bm25.every((b) => (b === undefined) === (system !== 'hybrid'))).toBe(true);
        if (system === 'hybrid') expect(bm25.some((b) => b!.terms.length === 2)).toBe(true);
        if (system === 'sparse-fusion') {
          // The floored path (NaN ↔ null) and unnamed pieces (undefined ↔ null) are exercised.
          const tokens = results.flatMap((r) => r.evidence!.tokens);
          expect(tokens.some((t) => t.floored && Number.isNaN(t.similarity))).toBe(true);
          if (tokenText === undefined)
            expect(tokens.every((t) => t.queryPiece === undefined)).toBe(true);
        }
      }
    },
  );

  it('interventions: JSON and back is the in-process record', async () => {
    const { results, interventions } = await searchViewWithInterventions(
      v,
      q,
      {
        system: 'sparse-fusion',
        k: 5,
        tokenK: 8,
        tokenText: (id) => `tok${id}`,
        interventions: { removeTop: 6, tokens: ['tok2001'] },
      },
      scorer,
    );
    const back = overTheWire({
      results: results.map(searchResultToJson),
      interventions: interventionsToJson(interventions!),
    });
    expect(interventionsFromJson(back.interventions!)).toStrictEqual({
      ...interventions!,
      removals: interventions!.removals.map((r) => ({ ...r, removed: [...r.removed] })),
    });
  });

  it('refuses an answer that is not the format (unknown keys, missing fields)', () => {
    const [r] = [{ id: 'm', rank: 1, score: 1, pooled: 1, pooledRank: 1, sparse: 1, text: 't' }];
    expect(() => overTheWire({ results: [{ ...r, extra: 1 }] })).toThrow();
    expect(() => overTheWire({ results: [{ ...r, rank: undefined }] })).toThrow();
    expect(overTheWire({ results: [r] }).results[0]).toEqual(r);
  });
});
