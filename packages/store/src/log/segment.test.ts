import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import {
  readSegment,
  segmentBytes,
  encodeSegmentCodes,
  writeSegment,
  type SegmentRows,
} from './segment.js';
import { readSegmentKeys } from './segment-read.js';
import type { StoreCodec } from './settings.js';
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

// A read segment also carries its codes as stored; the rows are what must round-trip.
const plain = ({ codes: _codes, ...r }: SegmentRows) => ({
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
    const r = await rows();
    const table = tableFromIPC(segmentBytes(r, 'model-x', encodeSegmentCodes('sq4', r.encoded)));
    expect(JSON.parse(table.schema.metadata.get('bfe.codec')!)).toMatchObject([{ name: 'sq4' }]);
    expect(table.schema.metadata.get('bfe.bank')).toBe('bank-1');
    expect(table.schema.fields.map((f) => f.name)).toEqual([
      'id',
      'text',
      'meta',
      'seq',
      'truncated',
      'pooled',
      'codec_block',
      'token_codes',
      'token_ids',
      'token_positions',
    ]);
    expect(table.getChild('token_ids')!.get(1)!.length).toBe(1); // 'dog': one token
    expect(table.getChild('token_codes')!.get(1)!.get(0)).toHaveLength(4); // 8 dims, 4 bits
  });

  it('keep token states in their codec, within half a level of each dimension', async () => {
    const r = await rows();
    const e = r.encoded;
    const tokens = e.tokenOffsets[e.count]!;
    for (const [codec, levels, bytes] of [
      ['fp16', 0, 16],
      ['sq8', 255, 8],
      ['sq4', 15, 4],
    ] as [StoreCodec, number, number][]) {
      const path = join(tmpDir(), `${codec}.arrow`);
      const facts = await writeSegment(path, r, 'model-x', codec);
      expect(facts.codec).toBe(codec);
      const back = await readSegment(path, {
        ...facts,
        bank: 'bank-1',
        model: 'model-x',
        dim: 8,
        rows: 3,
      });
      expect(Array.from(back.encoded.pooled)).toEqual(Array.from(e.pooled)); // pooled stay fp32
      expect(Array.from(back.encoded.tokenIds)).toEqual(Array.from(e.tokenIds));
      expect(Array.from(back.encoded.tokenPositions)).toEqual(Array.from(e.tokenPositions));
      for (let d = 0; d < 8; d++) {
        // The bound of each dimension, from its own minimum and maximum over the segment.
        let lo = Infinity;
        let hi = -Infinity;
        for (let t = 0; t < tokens; t++) {
          lo = Math.min(lo, e.tokenVectors[t * 8 + d]!);
          hi = Math.max(hi, e.tokenVectors[t * 8 + d]!);
        }
        const bound = levels === 0 ? 1e-3 : ((hi - lo) / levels) * 0.5 + 1e-6;
        for (let t = 0; t < tokens; t++) {
          const err = Math.abs(back.encoded.tokenVectors[t * 8 + d]! - e.tokenVectors[t * 8 + d]!);
          expect(err).toBeLessThanOrEqual(bound);
        }
      }
      const codes = tableFromIPC(readFileSync(path)).getChild('token_codes')!.get(0)!.get(0);
      expect(codes).toHaveLength(bytes);
    }
  });

  it('open by parts: ids, sequences and token offsets read where the directory says', async () => {
    const path = join(tmpDir(), '000003.arrow');
    const r = await rows();
    const facts = await writeSegment(path, r, 'model-x', 'sq8');
    const keys = readSegmentKeys(path, 3, facts.bytes, facts.directory);
    expect(keys.ids).toEqual(['m1', 'm2', 'm3']);
    expect(Array.from(keys.seqs)).toEqual([4, 9, 11]);
    expect(Array.from(keys.tokenOffsets)).toEqual(Array.from(r.encoded.tokenOffsets));
    expect(() => readSegmentKeys(path, 3, facts.bytes + 1, facts.directory)).toThrow(/bytes/);
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
