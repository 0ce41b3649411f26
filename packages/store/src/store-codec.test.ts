import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { readManifest } from './log/manifest.js';
import { MemoryStore } from './store.js';
import { CODEC_TOLERANCE } from './testing/crash-harness.js';
import { fakeEmbedder } from './testing/index.js';

const open = (dir: string, extra: Parameters<typeof MemoryStore.open>[1] = {}) =>
  MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0, ...extra });

const texts = (bank: string, n: number) =>
  Array.from({ length: n }, (_, i) => ({
    id: `${bank}-${i}`,
    bank,
    text: `memory ${i} of ${bank}: the ${i % 3 === 0 ? 'cat' : 'dog'} sat on mat ${i * 7}`,
  }));

/** Largest token-state difference between the store's view of `bank` and the embedder's. */
async function drift(store: MemoryStore, bank: string): Promise<number> {
  const snap = store.snapshot();
  try {
    const view = snap.bank(bank);
    const e = await fakeEmbedder().encode(view.texts, 'passage');
    expect(Array.from(view.pooled)).toEqual(Array.from(e.pooled)); // pooled stay fp32
    expect(Array.from(view.tokenIds)).toEqual(Array.from(e.tokenIds));
    let worst = 0;
    for (let i = 0; i < e.tokenVectors.length; i++)
      worst = Math.max(worst, Math.abs(view.tokenVectors[i]! - e.tokenVectors[i]!));
    return worst;
  } finally {
    await snap.release();
  }
}

describe('MemoryStore codecs', () => {
  it('keeps token states in the codec it was created with, across reopen, in fewer bytes', async () => {
    const sizes: Record<string, number> = {};
    for (const codec of ['fp32', 'fp16', 'sq8', 'sq4'] as const) {
      const dir = tmpDir(`bfe-codec-${codec}-`);
      const store = await open(dir, { codec });
      await store.add(texts('b', 40));
      await store.close();
      const again = await open(dir); // no codec asked: the store keeps its own
      expect(again.settings.codec).toBe(codec);
      expect((await again.stats()).codec).toBe(codec);
      const worst = await drift(again, 'b');
      expect(worst).toBeLessThanOrEqual(CODEC_TOLERANCE[codec]);
      if (codec === 'fp32') expect(worst).toBe(0);
      else expect(worst).toBeGreaterThan(0);
      const hits = await again.search({ bank: 'b', query: 'cat mat', k: 5 });
      expect(hits).toHaveLength(5);
      sizes[codec] = (await readManifest(dir))!.segments.reduce((a, s) => a + s.bytes, 0);
      await again.close();
    }
    // The fake embedder's 8-d states: 32, 16, 8 and 4 bytes a token, plus the other columns.
    expect(sizes.fp16!).toBeLessThan(sizes.fp32!);
    expect(sizes.sq8!).toBeLessThan(sizes.fp16!);
    expect(sizes.sq4!).toBeLessThan(sizes.sq8!);
  });

  it('flushes rows replayed from the WAL intact (their arrays are views into the log read back)', async () => {
    for (const codec of ['fp32', 'sq8'] as const) {
      const dir = tmpDir(`bfe-codec-replay-${codec}-`);
      const store = await open(dir, { codec });
      await store.add(texts('r', 3));
      await store.close({ flush: false }); // the rows stay in the WAL
      const replayed = await open(dir);
      await replayed.flush(); // the replayed rows become a segment
      await replayed.close();
      const again = await open(dir);
      expect((await readManifest(dir))!.segments).toHaveLength(1);
      expect(await drift(again, 'r')).toBeLessThanOrEqual(CODEC_TOLERANCE[codec]);
      await again.close();
    }
  });

  it('compacts without rounding twice: merged segments keep their codes and models', async () => {
    const dir = tmpDir('bfe-codec-compact-');
    const store = await open(dir, { codec: 'sq4' });
    const all = texts('a', 30);
    for (const part of [all.slice(0, 10), all.slice(10, 20), all.slice(20)]) {
      await store.add(part);
      await store.flush(); // three segments, each with its own fitted model
    }
    await store.delete(['a-3'], { bank: 'a' });
    await store.update([{ id: 'a-12', bank: 'a', text: 'an updated memory about a cat' }]);
    await store.flush();
    const vectors = () => {
      const snap = store.snapshot();
      const v = snap.bank('a');
      const out = { ids: [...v.ids], tokens: Array.from(v.tokenVectors) };
      void snap.release();
      return out;
    };
    const before = vectors();
    const [report] = await store.compact({ bank: 'a' });
    expect(report).toMatchObject({ segmentsIn: 4, segmentsOut: 1, rowsOut: 29 });
    expect(vectors()).toEqual(before);
    await store.close();
    const m = (await readManifest(dir))!;
    expect(m.segments).toHaveLength(1);
    const again = await open(dir);
    const snap = again.snapshot();
    expect(Array.from(snap.bank('a').tokenVectors)).toEqual(before.tokens);
    await snap.release();
    expect(await drift(again, 'a')).toBeLessThanOrEqual(CODEC_TOLERANCE.sq4);
    await again.close();
  });

  it('refuses another codec at open, and migrates on compact({ codec })', async () => {
    const dir = tmpDir('bfe-codec-migrate-');
    const store = await open(dir, { codec: 'fp32' });
    await store.add(texts('a', 10));
    await store.flush();
    await store.add(texts('b', 10));
    await store.close();
    const refused = await open(dir, { codec: 'sq4' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).suggestion).toContain('bfe store compact');
    const s = await open(dir);
    const reports = await s.compact({ codec: 'sq8' });
    expect(reports.map((r) => r.bank).sort()).toEqual(['a', 'b']);
    expect(s.settings.codec).toBe('sq8');
    await s.add(texts('c', 5));
    await s.close();
    const m = (await readManifest(dir))!;
    expect(m.codec).toBe('sq8');
    expect(m.segments.map((x) => x.codec)).toEqual(['sq8', 'sq8', 'sq8']);
    const reopened = await open(dir, { codec: 'sq8' });
    for (const bank of ['a', 'b', 'c'])
      expect(await drift(reopened, bank)).toBeLessThanOrEqual(CODEC_TOLERANCE.sq8);
    await reopened.close();
  });

  it('holds no more than its cache budget, and reads a bank only when it is searched', async () => {
    const dir = tmpDir('bfe-codec-cache-');
    const store = await open(dir, { codec: 'sq8' });
    for (const bank of ['a', 'b', 'c', 'd']) await store.add(texts(bank, 30));
    await store.close();
    // A flipped byte in bank c's token codes: the open reads around it, a search of c finds it.
    const manifest = (await readManifest(dir))!;
    const c = manifest.segments.find((x) => x.bank === 'c')!;
    const path = join(dir, c.file);
    const bytes = readFileSync(path);
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(path, bytes);
    const small = await open(dir, { cacheBytes: 1 });
    expect((await small.stats()).cache.loads).toBe(0);
    for (const bank of ['a', 'b', 'd']) {
      expect(await small.search({ bank, query: 'cat', k: 3 })).toHaveLength(3);
      expect((await small.stats()).cache.entries).toBeLessThanOrEqual(1);
    }
    await expect(small.search({ bank: 'c', query: 'cat', k: 3 })).rejects.toThrow(
      ArtifactCorruptError,
    );
    expect(await small.search({ bank: 'a', query: 'dog', k: 3 })).toHaveLength(3);
    await small.close({ flush: false });
  });

  it('gathers a view of several segments from their codes, never decoding a segment whole', async () => {
    const dir = tmpDir('bfe-codec-gather-');
    const store = await open(dir, { codec: 'sq4' });
    const all = texts('a', 60);
    for (let i = 0; i < 60; i += 20) {
      await store.add(all.slice(i, i + 20));
      await store.flush();
    }
    await store.close();
    const segments = (await readManifest(dir))!.segments;
    expect(segments).toHaveLength(3);
    const fileBytes = segments.reduce((a, x) => a + x.bytes, 0);
    const gathered = await open(dir);
    const snap = gathered.snapshot();
    const view = snap.bank('a');
    const tokens = Array.from(view.tokenVectors);
    // The cache holds the segments' file bytes and the view (its arrays and texts): no
    // segment's float32 states decoded whole beside the view's.
    const viewBytes =
      view.pooled.byteLength +
      view.tokenVectors.byteLength +
      view.tokenIds.byteLength +
      view.tokenPositions.byteLength +
      view.tokenOffsets.byteLength +
      view.texts.reduce((a, t) => a + 2 * t.length, 0);
    expect((await gathered.stats()).cache.bytes).toBe(fileBytes + viewBytes);
    await snap.release();
    await gathered.compact({ bank: 'a' }); // one segment, codes copied: decoded whole at first use
    await gathered.close();
    const whole = await open(dir);
    const one = whole.snapshot();
    expect(Array.from(one.bank('a').tokenVectors)).toEqual(tokens);
    await one.release();
    await whole.close();
  });
});
