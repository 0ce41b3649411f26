import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView } from '../types.js';
import type { SegmentRows } from './segment.js';
import { grownView } from './view-growth.js';

// A bank's view after adds grows from the view before (no copy of the bank's rows); after
// updates, deletes and flushes it is built again. Either way it must hold exactly the live
// memories in write order, with the embedder's own vectors (fp32 store: exact), and a view a
// reader already holds must never change.

const embedder = fakeEmbedder();

interface Copy {
  ids: string[];
  pooled: number[];
  tokens: number[];
  offsets: number[];
}
const copy = (v: BankView): Copy => ({
  ids: [...v.ids],
  pooled: Array.from(v.pooled),
  tokens: Array.from(v.tokenVectors),
  offsets: Array.from(v.tokenOffsets),
});

describe('bank views grown by adds', () => {
  it('equal the live memories after every add, update, delete and flush; held views never change', async () => {
    const store = await MemoryStore.open(tmpDir('bfe-view-growth-'), {
      embedder,
      codec: 'fp32',
      compactSegments: 0,
    });
    const rand = rng(7);
    const live = new Map<string, string>(); // id → text, in write order of the live version
    let next = 0;
    let grew = 0;
    let held: { view: BankView; was: Copy } | undefined;
    let previous: BankView | undefined;
    try {
      for (let step = 0; step < 120; step++) {
        const r = rand();
        const ids = [...live.keys()];
        if (r < 0.65 || ids.length < 3) {
          const n = 1 + Math.floor(rand() * 3);
          const items = Array.from({ length: n }, () => {
            const id = `m${next++}`;
            return {
              id,
              bank: 'b',
              text: `memory ${id} about ${['cats', 'dogs', 'mats'][next % 3]}`,
            };
          });
          await store.add(items);
          for (const m of items) live.set(m.id, m.text);
        } else if (r < 0.77) {
          const id = ids[Math.floor(rand() * ids.length)]!;
          const text = `updated ${id} at step ${step}`;
          await store.update([{ id, bank: 'b', text }]);
          live.delete(id);
          live.set(id, text);
        } else if (r < 0.89) {
          const id = ids[Math.floor(rand() * ids.length)]!;
          await store.delete([id], { bank: 'b' });
          live.delete(id);
        } else await store.flush();
        const snap = store.snapshot();
        const view = snap.bank('b');
        const texts = [...live.values()];
        const want = await embedder.encode(texts, 'passage');
        expect(view.ids).toEqual([...live.keys()]);
        expect(view.texts).toEqual(texts);
        expect(Array.from(view.pooled)).toEqual(Array.from(want.pooled));
        expect(Array.from(view.tokenOffsets)).toEqual(Array.from(want.tokenOffsets));
        expect(Array.from(view.tokenVectors)).toEqual(Array.from(want.tokenVectors));
        expect(Array.from(view.tokenIds)).toEqual(Array.from(want.tokenIds));
        if (previous !== undefined && view.tokenIds.buffer === previous.tokenIds.buffer) grew++;
        previous = view;
        // A view held across writes (a search under way) keeps what it had.
        if (held !== undefined) expect(copy(held.view)).toEqual(held.was);
        if (step % 10 === 0) held = { view, was: copy(view) };
        await snap.release();
      }
    } finally {
      await store.close();
    }
    // Most adds grew the view before in place (the test would not see growth otherwise).
    expect(grew).toBeGreaterThan(30);
  });
});

/** Rows `ids` written at sequences `seqs`, encoded by the fake embedder. */
async function rows(ids: string[], seqs: number[]): Promise<SegmentRows> {
  const texts = ids.map((id) => `memory ${id} about cats and mats`);
  return {
    bank: 'b',
    ids,
    texts,
    metas: ids.map(() => undefined),
    seqs: Float64Array.from(seqs),
    encoded: await embedder.encode(texts, 'passage'),
  };
}

const empty = (dim: number): BankView => ({
  bank: 'b',
  model: embedder.model,
  dim,
  ids: [],
  texts: [],
  metas: [],
  pooled: new Float32Array(0),
  tokenOffsets: new Int32Array(1),
  tokenVectors: new Float32Array(0),
  tokenIds: new Int32Array(0),
  tokenPositions: new Int32Array(0),
  seqs: new Float64Array(0),
  version: -1,
});

describe('grownView', () => {
  it('grows a view that is not the last made on its arrays into new arrays, leaving the later view as it was', async () => {
    const dim = embedder.dim;
    const first = await rows(['a', 'b', 'c', 'x'], [1, 2, 3, 4]);
    const v1 = grownView(empty(dim), [first], undefined, dim)!; // room for 6 rows
    const v2 = grownView(v1, [await rows(['y'], [5])], undefined, dim)!;
    expect(v2.tokenVectors.buffer).toBe(v1.tokenVectors.buffer); // grown in place
    const was = copy(v2);
    // Room for one more row is left, but v1 is not the last view made on those arrays.
    const other = grownView(v1, [await rows(['d'], [6])], undefined, dim)!;
    expect(copy(v2)).toEqual(was);
    expect(other.tokenVectors.buffer).not.toBe(v1.tokenVectors.buffer);
    expect(other.ids).toEqual(['a', 'b', 'c', 'x', 'd']);
    const want = await rows(['a', 'b', 'c', 'x', 'd'], [1, 2, 3, 4, 6]);
    expect(Array.from(other.tokenVectors)).toEqual(Array.from(want.encoded.tokenVectors));
    // An id written again (an update) or twice is not an append.
    expect(grownView(v2, [await rows(['b'], [7])], undefined, dim)).toBeUndefined();
    expect(grownView(v2, [await rows(['f', 'f'], [7, 8])], undefined, dim)).toBeUndefined();
  });
});
