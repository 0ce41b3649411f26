import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView } from '../types.js';
import { compactStore } from './compact.js';
import { openForMaintenance } from './open.js';
import { storeReport } from './stats.js';
import { verifyStore } from './verify.js';
import { DEFAULT_STORE_CODEC } from '../log/settings.js';

/** Bank `a` in three segments with an update and a delete; bank `b` in one; one row unflushed. */
async function makeStore(): Promise<string> {
  const dir = tmpDir();
  const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0 });
  await store.add([
    { id: 'x', bank: 'a', text: 'one two three' },
    { id: 'y', bank: 'a', text: 'four five' },
    { id: 'z', bank: 'b', text: 'six seven eight nine' },
  ]);
  await store.flush();
  await store.update([{ id: 'x', bank: 'a', text: 'ten eleven' }]);
  await store.flush();
  await store.delete(['y'], { bank: 'a' });
  await store.add([{ id: 'w', bank: 'a', text: 'twelve' }]);
  await store.flush();
  await store.add([{ id: 'v', bank: 'a', text: 'thirteen fourteen' }]);
  await store.close({ flush: false });
  return dir;
}

function plain(v: BankView) {
  return {
    ids: [...v.ids],
    texts: [...v.texts],
    seqs: Array.from(v.seqs ?? []),
    pooled: Array.from(v.pooled),
    tokenVectors: Array.from(v.tokenVectors),
    tokenIds: Array.from(v.tokenIds),
  };
}

describe('storeReport', () => {
  it('counts live memories and tokens, and bytes that are the files on disk', async () => {
    const dir = await makeStore();
    writeFileSync(join(dir, 'MANIFEST.json.note'), 'not counted');
    const { store, manifest } = await openForMaintenance(dir);
    try {
      const r = await storeReport(store, manifest, dir);
      expect(r).toMatchObject({
        memories: 4,
        tokens: 9,
        segments: 4,
        model: 'fake-embedder',
        dim: 8,
      });
      expect(r.settings.codec).toBe(DEFAULT_STORE_CODEC);
      expect(
        r.banks.map((b) => [b.bank, b.memories, b.tokens, b.segments, b.memtableRows]),
      ).toEqual([
        ['a', 3, 5, 3, 1],
        ['b', 1, 4, 1, 0],
      ]);
      const size = (rel: string) => statSync(join(dir, rel)).size;
      const segmentFiles = readdirSync(join(dir, 'segments')).map((n) => `segments/${n}`);
      const wal = readdirSync(dir).filter((n) => n.startsWith('wal-'));
      expect(r.bytes.segments).toBe(segmentFiles.reduce((a, f) => a + size(f), 0));
      expect(r.bytes.wal).toBe(wal.reduce((a, f) => a + size(f), 0));
      expect(r.bytes.manifest).toBe(size('MANIFEST.json'));
      expect(r.bytes.total).toBe(r.bytes.segments + r.bytes.wal + r.bytes.manifest);
      expect(r.bytesPerToken).toBeCloseTo(r.bytes.total / 9, 9);
      // Bank a's segments hold the token rows of x, y, x' and w (superseded and deleted included).
      const a = r.banks[0]!;
      expect(a.segmentTokens).toBe(3 + 2 + 2 + 1);
      expect(a.bytesPerToken).toBeCloseTo(a.segmentBytes / 8, 9);
    } finally {
      await store.close({ flush: false });
    }
  });

  it("opens a windowed store for maintenance (no model: the open's window check encodes nothing)", async () => {
    const dir = tmpDir();
    const store = await MemoryStore.open(dir, {
      embedder: fakeEmbedder(),
      window: { size: 256, stride: 192 },
    });
    await store.add([{ id: 'a', bank: 'b', text: 'one two three' }]);
    await store.close();
    const { store: opened, manifest } = await openForMaintenance(dir);
    try {
      expect(manifest.window).toEqual({ size: 256, stride: 192 });
      expect((await opened.stats()).memories).toBe(1);
      await expect(opened.add([{ id: 'c', bank: 'b', text: 'x' }])).rejects.toThrow(
        /encodes nothing/,
      );
    } finally {
      await opened.close();
    }
  });

  it('refuses a directory that is not a store without creating one', async () => {
    const dir = join(tmpDir(), 'absent');
    await expect(openForMaintenance(dir)).rejects.toMatchObject({ code: 'DATA_MISSING' });
    await expect(openForMaintenance(tmpDir())).rejects.toMatchObject({ code: 'DATA_MISSING' });
  });
});

describe('compactStore', () => {
  it('flushes, merges segments, drops tombstones, keeps the live rows; the store verifies', async () => {
    const dir = await makeStore();
    let { store } = await openForMaintenance(dir);
    const snap = store.snapshot();
    const before = { a: plain(snap.bank('a')), b: plain(snap.bank('b')) };
    await snap.release();
    const report = await compactStore(store);
    await store.close();
    expect(report.flushedRows).toBe(1);
    expect(report.banks).toEqual([
      expect.objectContaining({
        bank: 'a',
        segmentsIn: 4,
        segmentsOut: 1,
        rowsIn: 5,
        rowsOut: 3,
        tombstonesDropped: 1,
      }),
    ]);
    expect(report).toMatchObject({ segmentsBefore: 4, segmentsAfter: 2, rowsIn: 5, rowsOut: 3 });
    expect(report.bytesAfter).toBeLessThan(report.bytesBefore);
    expect(readdirSync(join(dir, 'segments'))).toHaveLength(2);
    ({ store } = await openForMaintenance(dir));
    try {
      const again = store.snapshot();
      expect({ a: plain(again.bank('a')), b: plain(again.bank('b')) }).toEqual(before);
      await again.release();
      const r = await storeReport(store, (await openManifest(dir))!, dir);
      expect(r.bytes.total).toBe(report.bytesAfter);
      await expect(compactStore(store, { bank: 'nope' })).rejects.toMatchObject({
        code: 'DATA_INVALID',
      });
      expect(await compactStore(store, { bank: 'b' })).toMatchObject({ banks: [], flushedRows: 0 });
    } finally {
      await store.close();
    }
    expect((await verifyStore(dir)).intact).toBe(true);
  });
});

async function openManifest(dir: string) {
  const { readManifest } = await import('../log/manifest.js');
  return readManifest(dir);
}
