import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { MemoryInputError } from './input.js';
import { StoreLockedError } from './lock.js';
import { MemoryStore } from './store.js';
import { fakeEmbedder } from './testing/index.js';
import type { BankView } from './types.js';

const open = (dir: string, extra: Parameters<typeof MemoryStore.open>[1] = {}) =>
  MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0, ...extra });

/** A bank view as plain data, for equality across reopen and compaction. */
function plain(v: BankView) {
  return {
    ids: [...v.ids],
    texts: [...v.texts],
    metas: [...v.metas],
    pooled: Array.from(v.pooled),
    tokenOffsets: Array.from(v.tokenOffsets),
    tokenVectors: Array.from(v.tokenVectors),
    tokenIds: Array.from(v.tokenIds),
    tokenPositions: Array.from(v.tokenPositions),
  };
}

function viewOf(store: MemoryStore, bank: string) {
  const snap = store.snapshot();
  const v = plain(snap.bank(bank));
  void snap.release();
  return v;
}

describe('MemoryStore', () => {
  it('adds, gets, lists, updates and deletes', async () => {
    const store = await open(tmpDir());
    await store.add([
      { id: 'a', bank: 'b1', text: 'the cat sat', meta: { n: 1 } },
      { id: 'b', bank: 'b1', text: 'a dog ran' },
      { id: 'a', bank: 'b2', text: 'other bank' },
    ]);
    expect(store.get('b1', 'a')).toEqual({
      id: 'a',
      bank: 'b1',
      text: 'the cat sat',
      meta: { n: 1 },
    });
    expect(store.banks()).toEqual(['b1', 'b2']);
    await store.update([{ id: 'a', bank: 'b1', text: 'the cat slept' }]);
    expect(store.get('b1', 'a')?.text).toBe('the cat slept');
    expect(store.list('b1')).toEqual({
      items: [
        { id: 'b', bank: 'b1', text: 'a dog ran', meta: undefined },
        { id: 'a', bank: 'b1', text: 'the cat slept', meta: undefined },
      ],
      total: 2,
    });
    expect(await store.delete(['b', 'zz'], { bank: 'b1' })).toEqual({
      deleted: ['b'],
      unknown: ['zz'],
    });
    expect(store.get('b1', 'b')).toBeUndefined();
    const stats = await store.stats();
    expect(stats.memories).toBe(2);
    expect(stats.banks.b1).toMatchObject({ memories: 1, tokens: 3, segments: 0 });
    expect(stats.walBytes).toBeGreaterThan(0);
    await store.close();
  });

  it('recovers every write on reopen, from the WAL and from segments', async () => {
    const dir = tmpDir();
    let store = await open(dir);
    await store.add([{ id: 'x', bank: 'b', text: 'one two three' }]);
    await store.flush();
    await store.add([{ id: 'y', bank: 'b', text: 'four five' }]);
    await store.delete(['x'], { bank: 'b' });
    await store.add([{ id: 'x', bank: 'b', text: 'six' }]);
    const before = viewOf(store, 'b');
    await store.close({ flush: false });
    store = await open(dir);
    expect(viewOf(store, 'b')).toEqual(before);
    expect(before.ids).toEqual(['y', 'x']);
    expect(store.recovery.records).toBe(3);
    await store.close();
    const again = await open(dir);
    expect(viewOf(again, 'b')).toEqual(before);
    expect(again.recovery.records).toBe(0);
    await again.close();
  });
});
