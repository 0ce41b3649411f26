import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { readSegment, segmentBytes, writeSegment, type SegmentRows } from './segment.js';
import { fakeEmbedder } from '../testing/index.js';

async function rows(): Promise<SegmentRows> {
  const texts = ['the cat sat on the mat', 'dog', 'a b c d'];
  return {
    bank: 'bank-1',
    ids: ['m1', 'm2', 'm3'],
    texts,
    metas: [{ when: '2023-05-01' }, undefined, { tags: ['x'] }],
    seqs: new Float64Array([4, 9, 11]),
    encoded: await fakeEmbedder().encode(texts, 'passage'),
  };
}

const plain = (r: SegmentRows) => ({
  ...r,
  seqs: Array.from(r.seqs),
  encoded: Object.fromEntries(
    Object.entries(r.encoded).map(([k, v]) => [k, typeof v === 'number' ? v : Array.from(v)]),
  ),
});

describe('segments', () => {
  it('round-trip rows, metadata and vectors exactly', async () => {
    const path = join(tmpDir(), 'segments', '000001.arrow');
    const r = await rows();
    const facts = await writeSegment(path, r, 'model-x');
    const back = await readSegment(path, {
      ...facts,
      bank: 'bank-1',
      model: 'model-x',
      dim: 8,
      rows: 3,
    });
    expect(plain(back)).toEqual(plain(r));
  });

  it('explain themselves to a generic Arrow reader (schema metadata, list columns)', async () => {
    const table = tableFromIPC(segmentBytes(await rows(), 'model-x'));
    expect(table.schema.metadata.get('bfe.bank')).toBe('bank-1');
    expect(table.schema.fields.map((f) => f.name)).toEqual([
      'id',
      'text',
      'meta',
      'seq',
      'truncated',
      'pooled',
      'token_vectors',
      'token_ids',
      'token_positions',
    ]);
    expect(table.getChild('token_ids')!.get(1)!.length).toBe(1); // 'dog': one token
  });

  it('are refused, by name, when altered, truncated, missing or of another bank', async () => {
    const path = join(tmpDir(), '000002.arrow');
    const facts = await writeSegment(path, await rows(), 'model-x');
    const want = { ...facts, bank: 'bank-1', model: 'model-x', dim: 8, rows: 3 };
    const bytes = readFileSync(path);
    await expect(readSegment(path, { ...want, bank: 'other' })).rejects.toThrow(/bfe.bank/);
    bytes[200] = bytes[200]! ^ 1;
    writeFileSync(path, bytes);
    await expect(readSegment(path, want)).rejects.toThrow(ArtifactCorruptError);
    await expect(readSegment(path, want)).rejects.toThrow(`${path} is corrupt: its SHA-256`);
    writeFileSync(path, bytes.subarray(0, 100));
    await expect(readSegment(path, want)).rejects.toThrow(/100 bytes/);
    await expect(readSegment(`${path}.gone`, want)).rejects.toThrow(/missing/);
  });
});
