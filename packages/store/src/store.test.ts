import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { MemoryInputError } from './input.js';
import { StoreLockedError, currentLockOwner, formatLock } from './log/lock.js';
import { MemoryStore } from './store.js';
import { fakeEmbedder } from './testing/index.js';
import type { BankView } from './types.js';

// fp32: these tests compare views bit for bit across flushes and reopens (the codecs' own
// tests are store-codec.test.ts).
const open = (dir: string, extra: Parameters<typeof MemoryStore.open>[1] = {}) =>
  MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0, codec: 'fp32', ...extra });

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

  it('hasBank answers as banks() does: live memories only, before and after a flush', async () => {
    const store = await open(tmpDir());
    expect(store.hasBank('b1')).toBe(false);
    await store.add([
      { id: 'a', bank: 'b1', text: 'the cat sat' },
      { id: 'b', bank: 'b2', text: 'a dog ran' },
    ]);
    const listed = (): boolean[] => ['b1', 'b2', 'b3'].map((b) => store.banks().includes(b));
    const asked = (): boolean[] => ['b1', 'b2', 'b3'].map((b) => store.hasBank(b));
    expect(asked()).toEqual([true, true, false]);
    await store.delete(['b'], { bank: 'b2' }); // b2 keeps rows, none of them live
    expect(asked()).toEqual([true, false, false]);
    expect(asked()).toEqual(listed());
    await store.flush();
    expect(asked()).toEqual(listed());
    // A snapshot lists every bank with rows, live or not, and answers hasBank alike.
    const snap = store.snapshot();
    expect(['b1', 'b2', 'b3'].map((b) => snap.hasBank(b))).toEqual(
      ['b1', 'b2', 'b3'].map((b) => snap.banks().includes(b)),
    );
    void snap.release();
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

  it('refuses bad input with a typed error and leaves the store unchanged', async () => {
    const dir = tmpDir();
    const store = await open(dir);
    await store.add([{ id: 'kept', bank: 'b', text: 'kept memory' }]);
    const before = { view: viewOf(store, 'b'), wal: readFileSync(join(dir, 'wal-000001.log')) };
    const bad: [string, unknown[], RegExp][] = [
      ['empty text', [{ id: 'e', bank: 'b', text: '' }], /text: empty/],
      ['blank text', [{ id: 'e', bank: 'b', text: ' \n ' }], /text: empty/],
      ['empty id', [{ id: '', bank: 'b', text: 'x' }], /empty id/],
      [
        'duplicate ids in a batch',
        [
          { id: 'd', bank: 'b', text: 'x' },
          { id: 'd', bank: 'b', text: 'y' },
        ],
        /appears twice/,
      ],
      ['bad bank name', [{ id: 'n', bank: '../etc', text: 'x' }], /bank/],
      [
        'a 1 MB memory',
        [{ id: 'big', bank: 'b', text: 'word '.repeat(200_000) }],
        /over the limit/,
      ],
      [
        'non-UTF-8 bytes',
        [{ id: 'u', bank: 'b', text: new Uint8Array([0x68, 0xff, 0x69]) }],
        /not valid UTF-8/,
      ],
      ['a lone surrogate', [{ id: 's', bank: 'b', text: 'a\uD800b' }], /well-formed/],
      ['an existing id', [{ id: 'kept', bank: 'b', text: 'again' }], /already exists/],
      [
        'metadata that is not JSON',
        [{ id: 'm', bank: 'b', text: 'x', meta: { f: () => 1 } }],
        /meta/,
      ],
      ['an empty batch', [], /non-empty array/],
    ];
    for (const [what, items, message] of bad) {
      const call = store.add(items as never);
      await expect(call, what).rejects.toThrow(MemoryInputError);
      await expect(store.add(items as never), what).rejects.toThrow(message);
    }
    await expect(store.update([{ id: 'nope', bank: 'b', text: 'x' }])).rejects.toThrow(
      /does not exist/,
    );
    await expect(store.delete([], { bank: 'b' })).rejects.toThrow(MemoryInputError);
    await expect(store.search({ bank: 'unknown', query: 'x' })).rejects.toThrow(/unknown bank/);
    expect(viewOf(store, 'b')).toEqual(before.view);
    expect(readFileSync(join(dir, 'wal-000001.log'))).toEqual(before.wal);
    // Valid UTF-8 bytes are accepted and decoded.
    await store.add([{ id: 'bytes', bank: 'b', text: new TextEncoder().encode('caf\u00e9 ok') }]);
    expect(store.get('b', 'bytes')?.text).toBe('caf\u00e9 ok');
    await store.close();
  });

  it('admits one writer per directory, and takes over the lock of a dead process', async () => {
    const dir = tmpDir();
    const store = await open(dir);
    await expect(open(dir)).rejects.toThrow(StoreLockedError);
    await expect(open(dir)).rejects.toThrow(`by process ${process.pid}`);
    await store.close();
    writeFileSync(join(dir, 'LOCK'), '999999999\n'); // no such process
    const again = await open(dir);
    expect(readFileSync(join(dir, 'LOCK'), 'utf8')).toBe(formatLock(currentLockOwner()));
    await again.close();
  });

  it('gives snapshots that later writes, flushes and compactions never change', async () => {
    const store = await open(tmpDir());
    await store.add([{ id: 'a', bank: 'b', text: 'first one' }]);
    await store.flush();
    await store.add([{ id: 'c', bank: 'b', text: 'second one' }]);
    const snap = store.snapshot();
    const seen = plain(snap.bank('b'));
    await store.update([{ id: 'a', bank: 'b', text: 'changed' }]);
    await store.delete(['c'], { bank: 'b' });
    await store.add([{ id: 'd', bank: 'b', text: 'third' }]);
    await store.flush();
    await store.compact();
    expect(plain(snap.bank('b'))).toEqual(seen);
    expect(seen.ids).toEqual(['a', 'c']);
    await snap.release();
    expect(() => snap.bank('b')).toThrow(/released/);
    expect(viewOf(store, 'b').ids).toEqual(['a', 'd']);
    await store.close();
  });

  it("reuses a bank's view across writes to other banks, and rebuilds it after its own", async () => {
    const store = await open(tmpDir());
    await store.add([
      { id: 'a', bank: 'one', text: 'first' },
      { id: 'b', bank: 'two', text: 'second' },
    ]);
    const first = store.snapshot();
    await store.add([{ id: 'c', bank: 'one', text: 'third' }]);
    const second = store.snapshot();
    expect(second.bank('two')).toBe(first.bank('two'));
    expect(second.bank('one')).not.toBe(first.bank('one'));
    expect(second.bank('one').ids).toEqual(['a', 'c']);
    await store.delete(['a'], { bank: 'one' });
    const third = store.snapshot();
    expect(third.bank('two')).toBe(first.bank('two'));
    expect(third.bank('one').ids).toEqual(['c']);
    for (const snap of [first, second, third]) await snap.release();
    await store.close();
  });

  it('names a corrupt segment: truncated at open, altered at its first read', async () => {
    const dir = tmpDir();
    const store = await open(dir);
    await store.add([{ id: 'a', bank: 'b', text: 'some words here' }]);
    await store.close();
    const [file] = readdirSync(join(dir, 'segments'));
    const path = join(dir, 'segments', file!);
    const intact = readFileSync(path);
    const bytes = Buffer.from(intact);
    bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
    writeFileSync(path, bytes);
    // An open reads a segment's ids by parts; the whole file, and its SHA-256, at first read.
    const opened = await open(dir);
    expect(() => opened.get('b', 'a')).toThrow(`store segment ${path} is corrupt: its SHA-256`);
    await expect(opened.search({ bank: 'b', query: 'words' })).rejects.toThrow(
      ArtifactCorruptError,
    );
    await opened.close({ flush: false });
    writeFileSync(path, intact.subarray(0, intact.length - 8));
    await expect(open(dir)).rejects.toThrow(ArtifactCorruptError);
    await expect(open(dir)).rejects.toThrow(`store segment ${path} is corrupt`);
    // A failed open leaves the lock free.
    expect(readdirSync(dir)).not.toContain('LOCK');
  });

  it('refuses invalid options with a ConfigError', async () => {
    await expect(open(tmpDir(), { flushBytes: 0 })).rejects.toThrow(ConfigError);
    await expect(open(tmpDir(), { compactSegments: -1 })).rejects.toThrow(/compactSegments/);
  });

  it("refuses to open another model's store", async () => {
    const dir = tmpDir();
    await (await open(dir)).close();
    await expect(MemoryStore.open(dir, { embedder: fakeEmbedder(8, 'other') })).rejects.toThrow(
      ConfigError,
    );
    await expect(MemoryStore.open(dir, { embedder: fakeEmbedder(4) })).rejects.toThrow(/8-d/);
  });

  it('flushes by itself past the memtable size, and removes garbage at open', async () => {
    const dir = tmpDir();
    const store = await open(dir, { flushBytes: 1024 });
    for (let i = 0; i < 10; i++)
      await store.add([{ id: `m${i}`, bank: 'b', text: 'many words in this memory text' }]);
    const stats = await store.stats();
    expect(stats.segments).toBeGreaterThan(1);
    expect(stats.memories).toBe(10);
    await store.close();
    writeFileSync(join(dir, 'segments', '999999.arrow'), 'left by a crash');
    writeFileSync(join(dir, '.MANIFEST.json.1.abcd.tmp'), '{');
    writeFileSync(join(dir, 'wal-000000.log'), 'old');
    const again = await open(dir);
    expect([...again.recovery.removed].sort()).toEqual([
      '.MANIFEST.json.1.abcd.tmp',
      'segments/999999.arrow',
      'wal-000000.log',
    ]);
    expect(again.list('b').total).toBe(10);
    await again.close();
  });
});

describe('MemoryStore.close', () => {
  it('waits for searches under way before it disposes the scorer they use', async () => {
    const inner = fakeEmbedder();
    let queries = 0;
    let gate: (() => void) | undefined;
    const embedder = {
      ...inner,
      model: inner.model,
      dim: inner.dim,
      encode: async (texts: readonly string[], role: 'passage' | 'query') => {
        // The second query waits here until the test lets it go.
        if (role === 'query' && ++queries === 2)
          await new Promise<void>((resolve) => (gate = resolve));
        return inner.encode(texts, role);
      },
      tokenText: (id: number) => inner.tokenText(id),
    };
    const store = await MemoryStore.open(tmpDir(), { embedder, compactSegments: 0 });
    await store.add([
      { id: 'a', bank: 'b', text: 'the cat sat on the mat' },
      { id: 'd', bank: 'b', text: 'a dog ran home' },
    ]);
    await store.flush();
    // The first search opens the store's own scorer; the second waits in the query encoder
    // while close is called.
    expect((await store.search({ bank: 'b', query: 'dog', k: 2 }))[0]!.id).toBe('d');
    const pending = store.search({ bank: 'b', query: 'cat mat', k: 2 });
    while (gate === undefined) await new Promise((r) => setTimeout(r, 1));
    let closed = false;
    const closing = store.close().then(() => (closed = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(false);
    await expect(store.search({ bank: 'b', query: 'dog' })).rejects.toThrow(/closed/);
    gate();
    const results = await pending;
    expect(results.map((r) => r.id)).toEqual(['a', 'd']);
    await closing;
    expect(closed).toBe(true);
  });
});
