import { describe, expect, it } from 'vitest';
import { ExactTokenIndex, JsSimilarityKernel, flatTokenStore, type TokenHits } from '@bfe/index';
import { randomBank, rng, unitVectors } from '@bfe/index/testing';
import { prefixView } from '../../testing/random-view.js';
import type { BankView } from '../../types.js';
import { BankGraph, type GraphParams } from './bank-graph.js';
import { GraphTokenIndex, type GraphSearchOutcome } from './graph-search.js';

const DIM = 16;
const PARAMS: GraphParams = { M: 16, efConstruction: 128, efSearch: 128, kind: 'f16', threads: 1 };
const kernel = new JsSimilarityKernel();

type SeqView = BankView & { readonly seqs: Float64Array };

/** A random bank view of `rows` memories whose row `i` has write sequence `i`. */
function bigView(seed: number, rows: number): SeqView {
  const b = randomBank(rows, 12, DIM, rng(seed), 4);
  const tokens = b.tokenOffsets[rows]!;
  return {
    bank: 'b',
    model: 'm',
    dim: DIM,
    ids: Array.from({ length: rows }, (_, i) => `m${i}`),
    texts: Array.from({ length: rows }, (_, i) => `t${i}`),
    metas: Array.from({ length: rows }, () => undefined),
    pooled: b.pooled,
    tokenOffsets: b.tokenOffsets,
    tokenVectors: b.tokenVectors,
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
    seqs: Float64Array.from({ length: rows }, (_, i) => i),
  };
}

const exactOf = (v: BankView) =>
  new ExactTokenIndex(
    { tokens: flatTokenStore(v.tokenVectors, DIM), tokenOffsets: v.tokenOffsets, ids: v.ids },
    kernel,
  );
const every = (v: BankView) => Int32Array.from({ length: v.ids.length }, (_, i) => i);

/** Share of exact's (row, token) hits the other search found. */
function recall(got: TokenHits, want: TokenHits): number {
  let hit = 0;
  for (let r = 0; r < want.rows; r++) {
    const mine = new Set(got.tokens.subarray(r * got.k, (r + 1) * got.k));
    for (let h = 0; h < want.k; h++) if (mine.has(want.tokens[r * want.k + h]!)) hit++;
  }
  return hit / want.tokens.length;
}

async function graphOver(v: SeqView, from: number, to: number, batch = 25): Promise<BankGraph> {
  const g = await BankGraph.create('b', DIM, PARAMS);
  for (let r = from; r < to; r += batch) await g.addRows(v, r, Math.min(r + batch, to));
  return g;
}

describe('GraphTokenIndex', () => {
  const limits = { maxMissing: 100_000, maxForeign: 100_000 };

  it('proposes what the exact search finds, with its exact similarities', async () => {
    const v = bigView(1, 400);
    const g = await graphOver(v, 0, 400);
    const q = unitVectors(24, DIM, rng(2));
    const index = new GraphTokenIndex(v, g, exactOf(v), limits);
    const got = await index.search(q, 24, 64, { memories: every(v) });
    const want = await exactOf(v).search(q, 24, 64, { memories: every(v) });
    expect(recall(got, want)).toBeGreaterThanOrEqual(0.95);
    // Every value is the float64 similarity of its token, rows descending.
    const store = flatTokenStore(v.tokenVectors, DIM);
    const one = new Float64Array(1);
    for (let r = 0; r < 24; r++)
      for (let h = 0; h < 64; h++) {
        store.dots(Int32Array.of(got.tokens[r * 64 + h]!), 1, q, r * DIM, one);
        expect(got.values[r * 64 + h]).toBe(one[0]);
        if (h > 0) expect(got.values[r * 64 + h]!).toBeLessThanOrEqual(got.values[r * 64 + h - 1]!);
      }
    expect(got.memories).toEqual(
      got.tokens.map((t) => v.tokenOffsets.findLastIndex((o) => o <= t)),
    );
    g.dispose();
  });

  it('sees exactly its own snapshot: later versions skipped, removed ones still found', async () => {
    const v = bigView(3, 400);
    const old = prefixView(v, 300) as SeqView;
    // The graph has run ahead: rows 0..99 were removed (deleted or updated later), 300..399 added.
    const g = await graphOver(v, 0, 400);
    for (let r = 0; r < 100; r++) await g.removeId(`m${r}`);
    const outcomes: GraphSearchOutcome[] = [];
    const index = new GraphTokenIndex(old, g, exactOf(old), limits, (o) => outcomes.push(o));
    // Queries equal to tokens of a removed row (in the snapshot) and of a later row (not in it).
    const removedToken = old.tokenOffsets[7]!;
    const laterToken = v.tokenOffsets[350]!;
    const q = new Float32Array(2 * DIM);
    q.set(v.tokenVectors.subarray(removedToken * DIM, (removedToken + 1) * DIM), 0);
    q.set(v.tokenVectors.subarray(laterToken * DIM, (laterToken + 1) * DIM), DIM);
    const got = await index.search(q, 2, 64, { memories: every(old) });
    expect(outcomes).toEqual(['graph']);
    expect(got.tokens[0]).toBe(removedToken);
    expect(got.values[0]).toBeCloseTo(1, 6);
    const total = old.tokenOffsets[300]!;
    for (const t of got.tokens) expect(t).toBeLessThan(total);
    expect(got.values[64]).toBeLessThan(0.999);
    const want = await exactOf(old).search(q, 2, 64, { memories: every(old) });
    expect(recall(got, want)).toBeGreaterThanOrEqual(0.95);

    // A removal after the snapshot read the graph: the next search reads it again.
    const before = await index.search(q, 1, 8, { memories: every(old) });
    await g.removeId('m150');
    const t150 = old.tokenOffsets[150]!;
    const q150 = old.tokenVectors.slice(t150 * DIM, (t150 + 1) * DIM);
    const after = await index.search(q150, 1, 8, { memories: every(old) });
    expect(after.tokens[0]).toBe(t150);
    expect(before.tokens[0]).toBe(removedToken);
    g.dispose();
  });

  it('runs exactly where the graph cannot serve: too many missing or foreign tokens, MaxSim, subsets', async () => {
    const v = bigView(4, 200);
    const g = await graphOver(v, 0, 50); // lacks 150 of the 200 memories
    const outcomes: GraphSearchOutcome[] = [];
    const tight = { maxMissing: 100, maxForeign: 100 };
    const index = new GraphTokenIndex(v, g, exactOf(v), tight, (o) => outcomes.push(o));
    const q = unitVectors(5, DIM, rng(5));
    const got = await index.search(q, 5, 16, { memories: every(v) });
    const want = await exactOf(v).search(q, 5, 16, { memories: every(v) });
    expect(got).toEqual(want);
    await index.search(q, 5, 16, { memories: every(v), bestPerMemory: true });
    await index.search(q, 5, 16, { memories: Int32Array.of(0, 2, 4) });
    expect(outcomes).toEqual(['exact', 'exact', 'exact']);
    await g.addRows(v, 50, 200); // now complete: the graph serves
    await index.search(q, 5, 16, { memories: every(v) });
    expect(outcomes.at(-1)).toBe('graph');
    g.dispose();
  });

  it('clamps k to a small bank and refuses it unclamped, like the exact backend', async () => {
    const v = bigView(6, 3);
    const g = await graphOver(v, 0, 3);
    const index = new GraphTokenIndex(v, g, exactOf(v), limits);
    const q = unitVectors(2, DIM, rng(7));
    const total = v.tokenOffsets[3]!;
    const got = await index.search(q, 2, 500, { memories: every(v), clampK: true });
    expect(got.k).toBe(total);
    await expect(index.search(q, 2, 500, { memories: every(v) })).rejects.toThrow(/larger than/);
    g.dispose();
  });
});

describe('BankGraph', () => {
  it('holds one version per id: a new version replaces the old, a removal drops it', async () => {
    const v = bigView(8, 20);
    const g = await graphOver(v, 0, 20, 7);
    const tokens = v.tokenOffsets[20]!;
    expect([g.versions, g.tokens]).toEqual([20, tokens]);
    expect(await g.addRows(v, 0, 20)).toBe(0); // the same versions: nothing added
    expect([g.versions, g.tokens, g.nextKey]).toEqual([20, tokens, tokens]);
    // Row 3 again under a later write sequence (an update): the old keys go, new ones come.
    const updated: SeqView = { ...v, seqs: v.seqs.map((s) => (s === 3 ? 100 : s)) };
    await g.addRows(updated, 3, 4);
    const n3 = v.tokenOffsets[4]! - v.tokenOffsets[3]!;
    expect(g.entryOfId('m3')).toMatchObject({ seq: 100, first: tokens, count: n3 });
    expect(g.entryOfSeq(3)).toBeUndefined();
    expect([g.versions, g.tokens, g.nextKey]).toEqual([20, tokens, tokens + n3]);
    await g.removeId('m3');
    await g.removeId('nope');
    expect([g.versions, g.tokens, g.removals]).toEqual([19, tokens - n3, 2]);
    g.dispose();
  });
});
