import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { readManifest } from './manifest.js';
import { MemoryStore } from '../store.js';
import { rng } from '@bfe/index/testing';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView } from '../types.js';

const open = (dir: string, compactSegments = 0) =>
  MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments });

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

async function views(store: MemoryStore) {
  const snap = store.snapshot();
  const out = Object.fromEntries(snap.banks().map((b) => [b, plain(snap.bank(b))]));
  await snap.release();
  return out;
}

describe('compaction', () => {
  it('keeps the same live rows (random adds, updates, deletes, flushes), and reopens to them', async () => {
    for (const seed of [1, 2, 3]) {
      const dir = tmpDir();
      const store = await open(dir);
      const rand = rng(seed);
      const live: [string, string][] = [];
      for (let step = 0; step < 120; step++) {
        const r = rand();
        const bank = rand() < 0.5 ? 'a' : 'b';
        if (r < 0.5 || live.length === 0) {
          const id = `m${step}`;
          await store.add([{ id, bank, text: `w${step % 7} w${step % 5} id${step}` }]);
          live.push([bank, id]);
        } else if (r < 0.7) {
          const [b, id] = live[Math.floor(rand() * live.length)]!;
          await store.update([{ id, bank: b, text: `updated ${step}`, meta: { step } }]);
        } else if (r < 0.9) {
          const [b, id] = live.splice(Math.floor(rand() * live.length), 1)[0]!;
          await store.delete([id], { bank: b });
        } else await store.flush();
      }
      const before = await views(store);
      const reports = await store.compact();
      expect(reports.length).toBeGreaterThan(0);
      expect(await views(store)).toEqual(before);
      const stats = await store.stats();
      for (const b of Object.keys(before)) expect(stats.banks[b]!.segments).toBeLessThanOrEqual(1);
      await store.close({ flush: false });
      const again = await open(dir);
      expect(await views(again)).toEqual(before);
      await again.close();
    }
  });

  it('never resurrects a memory whose delete is still in the memtable', async () => {
    const store = await open(tmpDir());
    await store.add([{ id: 'x', bank: 'a', text: 'one' }]);
    await store.flush();
    await store.add([{ id: 'y', bank: 'a', text: 'two' }]);
    await store.flush();
    await store.delete(['x', 'y'], { bank: 'a' }); // tombstones not yet flushed
    await store.compact();
    expect(store.list('a').total).toBe(0);
    await store.add([{ id: 'z', bank: 'a', text: 'three' }]);
    await store.flush();
    const [report] = await store.compact();
    expect(report).toMatchObject({ bank: 'a', segmentsOut: 1, rowsOut: 1, tombstonesDropped: 2 });
    expect(store.list('a').items.map((m) => m.id)).toEqual(['z']);
    await store.close();
  });

  it('deletes a retired segment only when the last snapshot using it is released', async () => {
    const dir = tmpDir();
    const store = await open(dir);
    await store.add([{ id: 'x', bank: 'a', text: 'one' }]);
    await store.flush();
    await store.add([{ id: 'y', bank: 'a', text: 'two' }]);
    await store.flush();
    const snap = store.snapshot();
    const files = snap.state.segments.map((s) => join(dir, s.entry.file));
    await store.delete(['x'], { bank: 'a' });
    await store.compact();
    expect(plain(snap.bank('a')).ids).toEqual(['x', 'y']); // the snapshot still sees both
    expect(files.every((f) => existsSync(f))).toBe(true);
    await snap.release();
    expect(files.some((f) => existsSync(f))).toBe(false);
    expect(store.list('a').items.map((m) => m.id)).toEqual(['y']);
    await store.close();
  });

  it('runs in the background once a bank reaches the segment count', async () => {
    const store = await open(tmpDir(), 3);
    for (let i = 0; i < 3; i++) {
      await store.add([{ id: `m${i}`, bank: 'a', text: `text ${i}` }]);
      await store.flush();
    }
    await store.compact(); // queued behind the automatic one
    expect((await store.stats()).banks.a).toMatchObject({ segments: 1, memories: 3 });
    await store.close();
  });

  it('starts no compaction from the flush of close (it would outlive the lock)', async () => {
    const dir = tmpDir();
    const store = await open(dir, 2);
    await store.add([{ id: 'a', bank: 'b', text: 'one' }]);
    await store.flush();
    await store.add([{ id: 'c', bank: 'b', text: 'two' }]);
    await store.close();
    await new Promise((wake) => setTimeout(wake, 50));
    const manifest = (await readManifest(dir))!;
    expect(manifest.segments).toHaveLength(2);
    expect(readdirSync(join(dir, 'segments')).sort()).toEqual(
      manifest.segments.map((s) => s.file.slice('segments/'.length)).sort(),
    );
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });
});
