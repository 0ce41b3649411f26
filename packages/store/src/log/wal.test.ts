import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { fakeEmbedder } from '../testing/index.js';
import { WalWriter, decodeRecords, encodeRecord, readWal, type WalRecord } from './wal.js';

async function records(): Promise<WalRecord[]> {
  const encoded = await fakeEmbedder().encode(['the cat sat', 'a dog', 'x'], 'passage');
  return [
    {
      kind: 'add',
      seq: 0,
      banks: ['a', 'b', 'a'],
      update: false,
      ids: ['1', '2', '3'],
      texts: ['the cat sat', 'a dog', 'x'],
      metas: [{ k: [1, 'two'] }, undefined, { z: null }],
      encoded,
    },
    { kind: 'delete', seq: 3, bank: 'a', ids: ['1'] },
  ];
}

describe('WAL records', () => {
  it('round-trip bit-exactly, vectors included', async () => {
    const rs = await records();
    const bytes = Buffer.concat(rs.map(encodeRecord));
    const back = decodeRecords(bytes);
    expect(back.validBytes).toBe(bytes.length);
    expect(back.records).toEqual(rs);
  });

  it('decode the same from aligned bytes (views) and misaligned bytes (copies)', async () => {
    const rs = await records();
    const bytes = Buffer.concat(rs.map(encodeRecord));
    for (const shift of [0, 1, 2, 3]) {
      const host = new Uint8Array(new ArrayBuffer(bytes.length + shift), shift, bytes.length);
      host.set(bytes);
      expect(decodeRecords(host).records).toEqual(rs);
    }
  });

  it('stop at a torn tail cut at any byte, keeping every whole record before it', async () => {
    const rs = await records();
    const first = encodeRecord(rs[0]!);
    const bytes = Buffer.concat([first, encodeRecord(rs[1]!)]);
    for (let cut = 0; cut < bytes.length; cut++) {
      const back = decodeRecords(bytes.subarray(0, cut));
      const whole = cut >= first.length ? 1 : 0;
      expect(back.records.length).toBe(whole);
      expect(back.validBytes).toBe(whole === 1 ? first.length : 0);
    }
  });

  it('stop at a flipped byte (CRC) and at a zeroed tail', async () => {
    const rs = await records();
    const first = encodeRecord(rs[0]!);
    const second = encodeRecord(rs[1]!);
    const flipped = Buffer.concat([first, second]);
    flipped[first.length + 12] = flipped[first.length + 12]! ^ 0x40;
    expect(decodeRecords(flipped).records).toHaveLength(1);
    const zeros = Buffer.concat([first, Buffer.alloc(64)]);
    expect(decodeRecords(zeros)).toMatchObject({ validBytes: first.length });
  });
});

describe('WalWriter', () => {
  it('appends durably and, reopened at the valid length, cuts a torn tail off', async () => {
    const path = join(tmpDir(), 'wal-000001.log');
    const rs = await records();
    const w = await WalWriter.open(path);
    await w.append(rs[0]!);
    await w.close();
    const whole = statSync(path).size;
    appendFileSync(path, encodeRecord(rs[1]!).subarray(0, 10)); // a torn second record
    const read = await readWal(path);
    expect(read).toMatchObject({ validBytes: whole, fileBytes: whole + 10 });
    const again = await WalWriter.open(path, read.validBytes);
    await again.append(rs[1]!);
    await again.close();
    expect((await readWal(path)).records).toEqual(rs);
    expect(readFileSync(path).length).toBe(whole + encodeRecord(rs[1]!).length);
  });

  it('reads an empty file as no records', async () => {
    const path = join(tmpDir(), 'wal-000002.log');
    writeFileSync(path, '');
    expect(await readWal(path)).toEqual({ records: [], validBytes: 0, fileBytes: 0 });
  });
});
