import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { flatTokenStore } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { PieceTokens } from '../view-tokens.js';
import { MIN_PIECE_TOKENS } from './view-build.js';

// A bank spread over several segments is viewed as pieces of the segments' own states, never
// one contiguous copy, and searched exactly as the same memories in one segment.

const texts = (from: number, n: number) =>
  Array.from({ length: n }, (_, j) => {
    const i = from + j;
    return {
      id: `m${i}`,
      bank: 'a',
      text: `memory ${i}: the ${['cat', 'dog', 'bird'][i % 3]} sat on mat ${i * 7} near ${i % 11}`,
    };
  });

/** An sq8 store of bank `a`: `segments` flushed segments of 1,000 memories each. */
async function segmentedStore(segments: number): Promise<MemoryStore> {
  const store = await MemoryStore.open(tmpDir('bfe-view-pieces-'), {
    embedder: fakeEmbedder(),
    codec: 'sq8',
    compactSegments: 0,
  });
  for (let s = 0; s < segments; s++) {
    await store.add(texts(s * 1000, 1000));
    await store.flush();
  }
  return store;
}

describe('PieceTokens', () => {
  it('reads within a piece as a view, across pieces as a copy, and rescores as one flat array', () => {
    const dim = 5;
    const rand = rng(3);
    const sizes = [7, 1, 12, 3];
    const pieces = sizes.map((n) => Float32Array.from({ length: n * dim }, () => rand() - 0.5));
    const flat = new Float32Array(sizes.reduce((a, n) => a + n, 0) * dim);
    let at = 0;
    for (const p of pieces) {
      flat.set(p, at);
      at += p.length;
    }
    const store = new PieceTokens(pieces, dim);
    const ref = flatTokenStore(flat, dim);
    expect(store.size).toBe(23);
    expect(store.pieceEnd(0)).toBe(7);
    expect(store.pieceEnd(7)).toBe(8);
    expect(store.pieceEnd(8)).toBe(20);
    expect(store.pieceEnd(22)).toBe(23);
    const inside = store.read(9, 15);
    expect(inside.buffer).toBe(pieces[2]!.buffer);
    for (const [a, b] of [
      [0, 23],
      [5, 9],
      [7, 8],
      [19, 23],
      [3, 4],
    ] as const)
      expect(Array.from(store.read(a, b))).toEqual(Array.from(flat.subarray(a * dim, b * dim)));
    const tokens = Int32Array.from([22, 0, 7, 8, 19, 3, 20, 21, 6, 7]);
    const query = Float32Array.from({ length: 2 * dim }, () => rand());
    const got = new Float64Array(tokens.length);
    const want = new Float64Array(tokens.length);
    store.dots(tokens, tokens.length, query, dim, got);
    ref.dots(tokens, tokens.length, query, dim, want);
    expect(Array.from(got)).toEqual(Array.from(want));
    expect(Array.from(store.contiguous())).toEqual(Array.from(flat));
  });
});

describe('bank views in pieces', () => {
  it('views several segments in place and searches them as one compacted segment', async () => {
    const store = await segmentedStore(3);
    try {
      await store.add(texts(3000, 4)); // a short segment: its run gathered
      await store.flush();
      await store.delete(['m1500'], { bank: 'a' }); // splits the second segment's run in two
      const snap = store.snapshot();
      const view = snap.bank('a');
      const tokens = view.tokens;
      expect(tokens).toBeInstanceOf(PieceTokens);
      const pieces = (tokens as PieceTokens).pieces;
      const long = pieces.filter((p) => p.length / view.dim >= MIN_PIECE_TOKENS);
      // Each segment's long runs are views into its decoded states: the two runs around the
      // deleted memory share one array; no piece holds the whole bank.
      expect(long).toHaveLength(4);
      expect(new Set(long.map((p) => p.buffer)).size).toBe(3); // one array per segment
      expect(long[1]!.buffer).toBe(long[2]!.buffer);
      const total = view.tokenOffsets[view.ids.length]!;
      expect(tokens!.size).toBe(total);
      expect(Math.max(...pieces.map((p) => p.length))).toBeLessThan(total * view.dim);
      const queries = ['cat on mat 14', 'a bird near 3', 'the dog sat'];
      const before = [];
      for (const query of queries)
        before.push(await store.search({ bank: 'a', query, k: 10, tokenK: 64 }));
      const states = Array.from(view.tokenVectors);
      await snap.release();
      await store.flush();
      await store.compact({ bank: 'a' });
      const one = store.snapshot();
      const compacted = one.bank('a');
      expect((compacted.tokens as PieceTokens).pieces).toHaveLength(1);
      expect(compacted.ids).toEqual(view.ids);
      expect(Array.from(compacted.tokenVectors)).toEqual(states);
      await one.release();
      for (let q = 0; q < queries.length; q++)
        expect(await store.search({ bank: 'a', query: queries[q]!, k: 10, tokenK: 64 })).toEqual(
          before[q],
        );
    } finally {
      await store.close();
    }
  });
});

describe('bank views grown by adds, in pieces', () => {
  it('keep the pieces of the view before and add a tail piece of their own', async () => {
    const store = await segmentedStore(2);
    try {
      const before = store.snapshot();
      const old = before.bank('a').tokens as PieceTokens;
      await store.add(texts(2000, 3));
      const after = store.snapshot();
      const grown = after.bank('a');
      const tokens = grown.tokens as PieceTokens;
      expect(tokens.pieces.slice(0, old.pieces.length).every((p, i) => p === old.pieces[i])).toBe(
        true,
      );
      expect(tokens.pieces).toHaveLength(old.pieces.length + 1);
      const tail = (grown.tokenOffsets[grown.ids.length]! - old.size) * grown.dim * 4;
      expect(tail).toBeGreaterThan(0);
      expect(tokens.madeBytes).toBe(old.madeBytes + tail); // the tail is the view's own
      await before.release();
      await after.release();
    } finally {
      await store.close();
    }
  });
});

describe('RowCache entries that read another in place', () => {
  it('go when the entry they read goes, by eviction or deletion', async () => {
    const { RowCache } = await import('./row-cache.js');
    const cache = new RowCache(100);
    const seg = {};
    cache.set(seg, 'rows', 60);
    cache.set('view', 'view', 10, [seg]);
    cache.set('other', 'x', 20);
    expect([cache.has(seg), cache.has('view'), cache.bytes]).toEqual([true, true, 90]);
    cache.set('big', 'y', 30); // over budget: the segment, least recently used, goes, and its view
    expect([cache.has(seg), cache.has('view'), cache.has('other'), cache.bytes]).toEqual([
      false,
      false,
      true,
      50,
    ]);
    cache.set(seg, 'rows', 60); // 'other' goes to make room
    cache.set('view', 'view', 10, [seg]);
    cache.delete(seg);
    expect([cache.has('view'), cache.has('big'), cache.bytes]).toEqual([false, true, 30]);
    cache.set(seg, 'rows', 10);
    cache.set('view', 'view', 10, [seg]);
    cache.delete('view'); // a view that goes leaves its segment
    expect([cache.has(seg), cache.bytes]).toEqual([true, 40]);
  });
});
