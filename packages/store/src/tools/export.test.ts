import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC, type Table } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import type { BankView } from '../types.js';
import { EXPORT_FORMAT, exportStore } from './export.js';
import { DEFAULT_STORE_CODEC } from '../log/settings.js';

const DIM = 8;

/** Three banks: flushed segments, an update, deletes, metadata or none, rows left in the WAL. */
async function makeStore(dir: string): Promise<MemoryStore> {
  const store = await MemoryStore.open(dir, {
    embedder: fakeEmbedder(DIM, 'fake-embedder', { jitter: 0.3 }),
    compactSegments: 0,
  });
  const words = ['cat', 'dog', 'sun', 'rain', 'tea', 'map', 'red', 'owl', 'sea'];
  const text = (i: number): string =>
    Array.from({ length: 1 + (i % 7) }, (_, j) => words[(i * 5 + j * 3) % words.length]).join(' ');
  await store.add(
    Array.from({ length: 40 }, (_, i) => ({
      id: `m${i}`,
      bank: i % 3 === 0 ? 'carol' : i % 3 === 1 ? 'alice' : 'bob',
      text: text(i),
      ...(i % 4 === 0 ? { meta: { i, tags: ['x', `t${i}`], nested: { ok: i % 8 === 0 } } } : {}),
    })),
  );
  await store.flush();
  await store.update([{ id: 'm1', bank: 'alice', text: 'updated text here', meta: { v: 2 } }]);
  await store.delete(['m4', 'm7'], { bank: 'alice' });
  await store.add([{ id: 'late', bank: 'bob', text: 'written after the flush é ✓' }]);
  // A bank whose only rows are one WAL record: its view is that record's arrays.
  await store.add([
    { id: 'd1', bank: 'dave', text: 'only in the log' },
    { id: 'd2', bank: 'dave', text: 'two more words here', meta: { d: true } },
  ]);
  return store;
}

function readTable(path: string): Table {
  return tableFromIPC(readFileSync(path));
}

/** Rows of `table` whose `bank` column is `bank`, as the exported row indices. */
function rowsOf(table: Table, bank: string): number[] {
  const banks = table.getChild('bank')!;
  const out: number[] = [];
  for (let i = 0; i < table.numRows; i++) if (banks.get(i) === bank) out.push(i);
  return out;
}

/** Every exported field of `bank` against the store's own view of it. */
function expectBank(memories: Table, tokens: Table, view: BankView): void {
  const rows = rowsOf(memories, view.bank);
  expect(rows).toHaveLength(view.ids.length);
  const col = (t: Table, name: string) => t.getChild(name)!;
  const dim = view.dim;
  for (const [i, r] of rows.entries()) {
    expect(col(memories, 'id').get(r)).toBe(view.ids[i]);
    expect(col(memories, 'text').get(r)).toBe(view.texts[i]);
    const meta = col(memories, 'meta').get(r) as string | null;
    expect(meta === null ? undefined : JSON.parse(meta)).toEqual(view.metas[i]);
    expect(col(memories, 'seq').get(r)).toBe(view.seqs![i]);
    expect(Array.from(col(memories, 'pooled').get(r) as Float32Array)).toEqual(
      Array.from(view.pooled.subarray(i * dim, (i + 1) * dim)),
    );
    const start = Number(col(memories, 'token_start').get(r));
    const count = col(memories, 'token_count').get(r) as number;
    const t0 = view.tokenOffsets[i]!;
    expect(count).toBe(view.tokenOffsets[i + 1]! - t0);
    for (let k = 0; k < count; k++) {
      const t = start + k;
      expect(col(tokens, 'bank').get(t)).toBe(view.bank);
      expect(col(tokens, 'memory_id').get(t)).toBe(view.ids[i]);
      expect(Number(col(tokens, 'memory_row').get(t))).toBe(r);
      expect(col(tokens, 'token_id').get(t)).toBe(view.tokenIds[t0 + k]);
      expect(col(tokens, 'position').get(t)).toBe(view.tokenPositions[t0 + k]);
      expect(Array.from(col(tokens, 'vector').get(t) as Float32Array)).toEqual(
        Array.from(view.tokenVectors.subarray((t0 + k) * dim, (t0 + k + 1) * dim)),
      );
    }
  }
}

describe('exportStore', () => {
  it("round-trips every field of every bank against the snapshot's views", async () => {
    const dir = tmpDir();
    await (await makeStore(dir)).close({ flush: false });
    // Reopened: the unflushed rows are replayed from the WAL (views into the log's bytes).
    const store = await MemoryStore.open(dir, { embedder: fakeEmbedder(DIM), compactSegments: 0 });
    try {
      const out = join(tmpDir(), 'export');
      // Small batches: several record batches per bank, token batches cutting through memories.
      const report = await exportStore(store, out, { batch: { memories: 3, tokens: 5 } });
      const memories = readTable(report.files.memories);
      const tokens = readTable(report.files.tokens);
      expect(memories.batches.length).toBeGreaterThan(3);
      expect(tokens.batches.length).toBeGreaterThan(3);
      const snap = store.snapshot();
      try {
        expect(report.banks.map((b) => b.bank)).toEqual(['alice', 'bob', 'carol', 'dave']);
        let tokenTotal = 0;
        for (const bank of ['alice', 'bob', 'carol', 'dave']) {
          const view = snap.bank(bank);
          expectBank(memories, tokens, view);
          tokenTotal += view.tokenOffsets[view.ids.length]!;
        }
        expect(memories.numRows).toBe(report.memories);
        expect(tokens.numRows).toBe(tokenTotal);
        expect(report.tokens).toBe(tokenTotal);
        expect(memories.numRows).toBe(40 - 2 + 1 + 2);
      } finally {
        await snap.release();
      }
      for (const [table, name] of [
        [memories, 'memories'],
        [tokens, 'tokens'],
      ] as const) {
        const meta = table.schema.metadata;
        expect(meta.get('bfe.format')).toBe(EXPORT_FORMAT);
        expect(meta.get('bfe.table')).toBe(name);
        expect(meta.get('bfe.model')).toBe('fake-embedder');
        expect(meta.get('bfe.dim')).toBe(String(DIM));
        expect(meta.get('bfe.codec')).toBe(DEFAULT_STORE_CODEC);
        expect(JSON.parse(meta.get('bfe.banks')!)).toEqual(['alice', 'bob', 'carol', 'dave']);
      }
      expect(String(memories.schema.fields.find((f) => f.name === 'pooled')!.type)).toBe(
        `FixedSizeList[${DIM}]<Float32>`,
      );
      expect(readdirSync(out).sort()).toEqual(['memories.arrow', 'tokens.arrow']);
    } finally {
      await store.close({ flush: false });
    }
  });

  it('exports one bank, refuses an unknown bank and files already there', async () => {
    const dir = tmpDir();
    const store = await makeStore(dir);
    try {
      const out = tmpDir();
      const report = await exportStore(store, out, { bank: 'bob' });
      const memories = readTable(report.files.memories);
      const tokens = readTable(report.files.tokens);
      const snap = store.snapshot();
      try {
        expectBank(memories, tokens, snap.bank('bob'));
      } finally {
        await snap.release();
      }
      expect(rowsOf(memories, 'alice')).toEqual([]);
      expect(JSON.parse(memories.schema.metadata.get('bfe.banks')!)).toEqual(['bob']);
      await expect(exportStore(store, out, { bank: 'bob' })).rejects.toMatchObject({
        code: 'CONFIG_INVALID',
      });
      await exportStore(store, out, { bank: 'carol', overwrite: true });
      expect(rowsOf(readTable(join(out, 'memories.arrow')), 'carol').length).toBeGreaterThan(0);
      const other = join(tmpDir(), 'x');
      await expect(exportStore(store, other, { bank: 'nobody' })).rejects.toMatchObject({
        code: 'DATA_INVALID',
      });
      expect(existsSync(other)).toBe(false);
    } finally {
      await store.close({ flush: false });
    }
  });

  it('writes valid empty files for a store without memories', async () => {
    const store = await MemoryStore.open(tmpDir(), { embedder: fakeEmbedder(DIM) });
    try {
      const report = await exportStore(store, tmpDir());
      expect(report).toMatchObject({ memories: 0, tokens: 0, banks: [] });
      const tokens = readTable(report.files.tokens);
      expect(tokens.numRows).toBe(0);
      expect(tokens.schema.fields.map((f) => f.name)).toEqual([
        'bank',
        'memory_id',
        'memory_row',
        'token_id',
        'position',
        'vector',
      ]);
    } finally {
      await store.close({ flush: false });
    }
  });
});
