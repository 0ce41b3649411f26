import { createHash } from 'node:crypto';
import {
  appendFileSync,
  rmSync,
  readFileSync,
  readdirSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { StoreLockedError } from '../log/lock.js';
import { readManifest } from '../log/manifest.js';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { verifyStore } from './verify.js';

/** A store of two banks: two flushed segments, a delete, and an add left in the WAL. */
async function makeStore(): Promise<string> {
  const dir = tmpDir();
  const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0 });
  await store.add([
    { id: 'a', bank: 'alice', text: 'the cat sat on the mat', meta: { n: 1 } },
    { id: 'b', bank: 'bob', text: 'a dog ran far away' },
  ]);
  await store.flush();
  await store.add([{ id: 'c', bank: 'alice', text: 'hello world again' }]);
  await store.flush();
  await store.delete(['a'], { bank: 'alice' });
  await store.add([{ id: 'd', bank: 'alice', text: 'only in the log' }]);
  await store.close({ flush: false });
  return dir;
}

/** Every file of the store and a hash of its bytes: verify must leave them as they were. */
function fingerprint(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel))) {
      const path = join(dir, rel, name);
      if (statSync(path).isDirectory()) walk(join(rel, name));
      else out[join(rel, name)] = createHash('sha256').update(readFileSync(path)).digest('hex');
    }
  };
  walk('');
  return out;
}

async function firstSegment(dir: string): Promise<string> {
  const manifest = await readManifest(dir);
  return manifest!.segments[0]!.file;
}

describe('verifyStore', () => {
  it('finds an intact store intact: every segment read, the WAL records counted', async () => {
    const dir = await makeStore();
    const before = fingerprint(dir);
    const report = await verifyStore(dir);
    expect(report.problems).toEqual([]);
    expect(report.intact).toBe(true);
    expect(report.segments).toMatchObject({ checked: 3, rows: 3 });
    expect(report.wal).toHaveLength(1);
    expect(report.wal[0]).toMatchObject({ records: 2, adds: 1, deletes: 1, rows: 1, tornBytes: 0 });
    expect(fingerprint(dir)).toEqual(before);
  });

  it('names a segment with one flipped byte, and changes nothing', async () => {
    const dir = await makeStore();
    const file = await firstSegment(dir);
    const bytes = readFileSync(join(dir, file));
    const at = Math.floor(bytes.length / 2);
    bytes[at] = bytes[at]! ^ 0x01;
    writeFileSync(join(dir, file), bytes);
    const before = fingerprint(dir);
    const report = await verifyStore(dir);
    expect(report.intact).toBe(false);
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatchObject({ file, kind: 'segment' });
    expect(report.problems[0]!.message).toMatch(/SHA-256 differs/);
    expect(report.segments.checked).toBe(2);
    expect(fingerprint(dir)).toEqual(before);
  });

  it('names a truncated segment and a missing one', async () => {
    const dir = await makeStore();
    const manifest = (await readManifest(dir))!;
    const [first, second] = manifest.segments;
    truncateSync(join(dir, first!.file), first!.bytes - 100);
    writeFileSync(join(dir, 'keep'), ''); // an unknown file, kept by open, named by verify
    rmSync(join(dir, second!.file));
    const report = await verifyStore(dir);
    expect(report.intact).toBe(false);
    const byFile = Object.fromEntries(report.problems.map((p) => [p.file, p.message]));
    expect(byFile[first!.file]).toMatch(
      `${first!.bytes - 100} bytes, the manifest says ${first!.bytes}`,
    );
    expect(byFile[second!.file]).toMatch(/missing/);
    expect(byFile.keep).toMatch(/not a file of a memory store/);
  });

  it('reports a torn WAL tail as a note (not damage) and does not cut it', async () => {
    const dir = await makeStore();
    const wal = readdirSync(dir).find((n) => n.startsWith('wal-'))!;
    const size = statSync(join(dir, wal)).size;
    appendFileSync(join(dir, wal), Buffer.from([200, 0, 0, 0, 1, 2, 3]));
    const report = await verifyStore(dir);
    expect(report.intact).toBe(true);
    expect(report.wal[0]).toMatchObject({ records: 2, tornBytes: 7, bytes: size + 7 });
    expect(report.notes.join('\n')).toMatch(/torn tail of 7 bytes/);
    expect(statSync(join(dir, wal)).size).toBe(size + 7);
  });

  it('names files the manifest does not account for, and leaves them', async () => {
    const dir = await makeStore();
    writeFileSync(join(dir, 'segments', '000099.arrow'), 'x');
    writeFileSync(join(dir, 'segments', '.000100.arrow.1.ab.tmp'), 'x');
    writeFileSync(join(dir, 'wal-000001.log'), '');
    const report = await verifyStore(dir);
    expect(report.intact).toBe(false);
    expect(report.problems.map((p) => [p.file, p.kind]).sort()).toEqual([
      ['segments/.000100.arrow.1.ab.tmp', 'unlisted'],
      ['segments/000099.arrow', 'unlisted'],
      ['wal-000001.log', 'unlisted'],
    ]);
    expect(readdirSync(join(dir, 'segments'))).toContain('000099.arrow');
  });

  it('reports a manifest that is not valid, and a WAL generation missing in between', async () => {
    const dir = await makeStore();
    const wal = readdirSync(dir).find((n) => n.startsWith('wal-'))!;
    const g = Number(/\d+/.exec(wal)![0]);
    writeFileSync(join(dir, `wal-${String(g + 2).padStart(6, '0')}.log`), '');
    let report = await verifyStore(dir);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: 'wal',
        message: expect.stringMatching(`generation ${g + 1} is missing`),
      }),
    ]);
    writeFileSync(join(dir, 'MANIFEST.json'), '{"schemaVersion": 1}');
    report = await verifyStore(dir);
    expect(report.problems[0]).toMatchObject({ file: 'MANIFEST.json', kind: 'manifest' });
    expect(report.intact).toBe(false);
  });

  it('refuses a store another open holds, and a directory that is not a store', async () => {
    const dir = await makeStore();
    const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0 });
    try {
      await expect(verifyStore(dir)).rejects.toBeInstanceOf(StoreLockedError);
    } finally {
      await store.close({ flush: false });
    }
    expect((await verifyStore(dir)).intact).toBe(true);
    await expect(verifyStore(join(dir, 'segments'))).rejects.toMatchObject({
      code: 'DATA_MISSING',
    });
    await expect(verifyStore(join(dir, 'nothing'))).rejects.toMatchObject({ code: 'DATA_MISSING' });
  });
});
