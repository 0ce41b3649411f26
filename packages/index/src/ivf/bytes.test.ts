import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JsSimilarityKernel } from '../js-kernel.js';
import { clusteredTokens, rng, unitVectors } from '../testing/random.js';
import { flatTokenStore } from '../token-store.js';
import { ivfBytes, ivfFromBytes, openIvfFile, writeIvfFile } from './bytes.js';
import { blockedCodeBytes } from './layout.js';
import { decodeAssignment, encodePlaceIds } from './place-ids.js';
import { trainIvf, type IvfData } from './train.js';

const DIM = 32;
const js = new JsSimilarityKernel();
const dir = mkdtempSync(join(tmpdir(), 'bfe-ivf-bytes-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pad8 = (n: number): number => Math.ceil(n / 8) * 8;

async function trained(seed: number, bits: 2 | 4): Promise<IvfData> {
  const random = rng(seed);
  const { vectors } = clusteredTokens(random, 90, DIM, (r) => unitVectors(8, DIM, r));
  return trainIvf(flatTokenStore(vectors, DIM), js, {
    centroids: 16,
    residualBits: bits,
    iterations: 4,
  });
}

/** A `BFEIVF03` file of `data`, written by hand as version 3 laid it out (float32, int32 ids). */
function version3Bytes(data: IvfData): Uint8Array {
  const arrays = [
    data.centroids,
    data.weights,
    data.cutoffs,
    data.clusterOffsets,
    data.tokens,
    data.deleted,
    data.codes,
  ];
  const json = new TextEncoder().encode(
    JSON.stringify({
      dim: data.dim,
      residualBits: data.residualBits,
      centroids: data.clusterOffsets.length - 1,
      tokens: data.tokens.length,
      sections: arrays.map((a) => a.byteLength),
      residuals: data.residuals,
      params: data.params,
    }),
  );
  let at = pad8(12 + json.length);
  const out = new Uint8Array(at + arrays.reduce((n, a) => n + pad8(a.byteLength), 0));
  out.set(new TextEncoder().encode('BFEIVF03'), 0);
  new DataView(out.buffer).setUint32(8, json.length, true);
  out.set(json, 12);
  for (const a of arrays) {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += pad8(a.byteLength);
  }
  return out;
}

function expectSameData(got: Omit<IvfData, 'codes'>, want: Omit<IvfData, 'codes'>): void {
  for (const key of ['centroids', 'weights', 'cutoffs', 'clusterOffsets', 'tokens', 'deleted'])
    expect(Array.from(got[key as 'tokens']), key).toEqual(Array.from(want[key as 'tokens']));
  expect(got.residuals).toEqual(want.residuals);
  expect(got.params).toEqual(want.params);
}

const headerOf = (bytes: Uint8Array): Record<string, unknown> => {
  const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(8, true);
  return JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + len))) as Record<
    string,
    unknown
  >;
};

describe('ivf.bin, version 4', () => {
  for (const bits of [2, 4] as const) {
    it(`stores float16 centroids and 2 bytes of token id a token (${bits}-bit)`, async () => {
      const data = await trained(5, bits);
      const n = data.tokens.length;
      const bytes = ivfBytes(data);
      expect(new TextDecoder().decode(bytes.subarray(0, 8))).toBe('BFEIVF04');
      const header = headerOf(bytes);
      expect(header).toMatchObject({ centroidBits: 16, ids: 'assignment16' });
      // Header, then centroids (2 B a value), weights and cutoffs (float32), offsets (int32),
      // one uint16 cluster a bank token, no deleted memories, codes: each padded to 8 bytes.
      const jsonLength = new DataView(bytes.buffer).getUint32(8, true);
      const buckets = 1 << bits;
      expect(bytes.byteLength).toBe(
        pad8(12 + jsonLength) +
          pad8(16 * DIM * 2) +
          pad8(DIM * buckets * 4) +
          pad8(DIM * (buckets - 1) * 4) +
          pad8(17 * 4) +
          pad8(n * 2) +
          blockedCodeBytes(n, DIM, bits),
      );
      const read = ivfFromBytes(bytes);
      expectSameData(read, data);
      expect(Buffer.from(read.codes).equals(Buffer.from(data.codes))).toBe(true);
      const file = join(dir, `v4-${bits}.bin`);
      writeIvfFile(file, data);
      expectSameData(openIvfFile(file).data, data);
    });
  }

  it('reads a version 3 file, and keeps centroids that are not float16 as float32', async () => {
    const data = await trained(6, 4);
    const v3 = version3Bytes(data);
    const read = ivfFromBytes(v3);
    expectSameData(read, data);
    const file = join(dir, 'v3.bin');
    writeFileSync(file, v3);
    expectSameData(openIvfFile(file).data, data);
    // Centroids from an older build (float32 values): written and read back bit for bit.
    const centroids = data.centroids.map((v, i) => (i === 3 ? v + 1e-6 : v));
    const older = { ...data, centroids };
    const bytes = ivfBytes(older);
    expect(headerOf(bytes)).toMatchObject({ centroidBits: 32 });
    expect(Array.from(ivfFromBytes(bytes).centroids)).toEqual(Array.from(centroids));
  });

  it('refuses a file whose token assignment disagrees with its cluster offsets', async () => {
    const data = await trained(7, 2);
    const bytes = ivfBytes(data);
    const offsets = data.clusterOffsets;
    // Move one token from the first non-empty cluster to another in the assignment section.
    const header = headerOf(bytes);
    const sections = header.sections as number[];
    const jsonLength = new DataView(bytes.buffer).getUint32(8, true);
    const idsAt = pad8(12 + jsonLength) + sections.slice(0, 4).reduce((n, l) => n + pad8(l), 0);
    const ids = new Uint16Array(bytes.buffer, idsAt, sections[4]! / 2);
    const k = offsets.findIndex((o, i) => offsets[i + 1]! > o);
    const t = data.tokens[offsets[k]!]!;
    expect(ids[t]).toBe(k);
    ids[t] = (k + 1) % 16;
    expect(() => ivfFromBytes(bytes)).toThrow(/assignment disagrees/);
  });
});

describe('place ids', () => {
  const offsets = Int32Array.of(0, 3, 3, 5);

  it('stores each bank token’s cluster and gives the layout back', () => {
    const tokens = Int32Array.of(1, 4, 6, 0, 5);
    const ids = encodePlaceIds(offsets, tokens);
    expect(ids.kind).toBe('assignment');
    if (ids.kind !== 'assignment') return;
    // Tokens 0..6: clusters 2, 0, –, –, 0, 2, 0 (none for 2 and 3).
    expect(Array.from(ids.assignment)).toEqual([2, 0, 0xffff, 0xffff, 0, 2, 0]);
    expect(Array.from(decodeAssignment(offsets, ids.assignment))).toEqual(Array.from(tokens));
  });

  it('keeps the int32 list where a cluster does not ascend, a token repeats or ids are sparse', () => {
    expect(encodePlaceIds(offsets, Int32Array.of(4, 1, 6, 0, 5)).kind).toBe('list');
    expect(encodePlaceIds(offsets, Int32Array.of(1, 4, 6, 1, 5)).kind).toBe('list');
    // Token 40 of 5 places: 41 entries of 2 bytes ≥ 5 ids of 4.
    expect(encodePlaceIds(offsets, Int32Array.of(1, 4, 40, 0, 5)).kind).toBe('list');
  });

  it('refuses an assignment with more tokens in a cluster than its offsets hold', () => {
    expect(() => decodeAssignment(offsets, Uint16Array.of(2, 0, 0, 0, 0, 2, 0xffff))).toThrow(
      /disagrees/,
    );
    expect(() => decodeAssignment(offsets, Uint16Array.of(2, 0, 0xffff, 0xffff, 0, 2))).toThrow(
      /disagrees/,
    );
  });
});
