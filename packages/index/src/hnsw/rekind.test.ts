import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { afterAll, describe, expect, it } from 'vitest';
import { buildHnsw, hnswFileKind, loadHnsw } from './hnsw.js';
import { castI8Into, rekindHnswFile } from './rekind.js';

const DIM = 48;
const N = 1500;
const params = { M: 16, efConstruction: 64, efSearch: 64 };

function vectors(n: number, seed: number): Float32Array {
  const rng = xoroshiro128plus(seed);
  const x = new Float32Array(n * DIM);
  for (let i = 0; i < n * DIM; i++) x[i] = uniformFloat64(rng) - 0.5; // not unit: the cast scales
  return x;
}

const x = vectors(N, 11);
const q = vectors(16, 12);
const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('rekindHnswFile', () => {
  it.each(['i8', 'f16'] as const)(
    'stores the vectors exactly as a usearch %s index of the same rows does, graph bytes unchanged',
    async (kind) => {
      const dir = await mkdtemp(join(tmpdir(), 'bfe-rekind-'));
      dirs.push(dir);
      await (await buildHnsw(x, N, DIM, params, { threads: 1 })).save(join(dir, 'f32.usearch'));
      await (
        await buildHnsw(x, N, DIM, params, { threads: 1, kind })
      ).save(join(dir, 'native.usearch'));
      const bytes = await rekindHnswFile(
        join(dir, 'f32.usearch'),
        join(dir, 'rekind.usearch'),
        kind,
        DIM,
      );
      expect(bytes).toBe((await stat(join(dir, 'rekind.usearch'))).size);
      expect(await hnswFileKind(join(dir, 'rekind.usearch'))).toBe(kind);
      const [src, native, out] = await Promise.all(
        ['f32', 'native', 'rekind'].map((f) => readFile(join(dir, `${f}.usearch`))),
      );
      const width = kind === 'i8' ? DIM : 2 * DIM;
      const vectorBytes = 8 + N * width;
      // usearch's own cast, byte for byte (row count and width included).
      expect(out!.subarray(0, vectorBytes).equals(native!.subarray(0, vectorBytes))).toBe(true);
      // Header (but the kind byte) and graph: the f32 file's.
      const tail = src!.subarray(8 + N * DIM * 4);
      const outTail = out!.subarray(vectorBytes);
      expect(outTail.length).toBe(tail.length);
      expect(outTail[14]).not.toBe(tail[14]);
      expect(Buffer.concat([outTail.subarray(0, 14), outTail.subarray(15)])).toEqual(
        Buffer.concat([tail.subarray(0, 14), tail.subarray(15)]),
      );
    },
  );

  it('the converted graph loads and searches with the cast vectors: i8 scores are their dot / 127²', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bfe-rekind-'));
    dirs.push(dir);
    await (await buildHnsw(x, N, DIM, params, { threads: 1 })).save(join(dir, 'f32.usearch'));
    await rekindHnswFile(join(dir, 'f32.usearch'), join(dir, 'i8.usearch'), 'i8', DIM);
    const wide = { ...params, efSearch: 400 };
    const index = await loadHnsw(join(dir, 'i8.usearch'), DIM, wide, { threads: 1, kind: 'i8' });
    expect(index.size).toBe(N);
    const k = 10;
    const res = index.search(q, 16, k);
    const x8 = new Int8Array(N * DIM);
    const q8 = new Int8Array(16 * DIM);
    castI8Into(x8, x, DIM);
    castI8Into(q8, q, DIM);
    let hit = 0;
    for (let r = 0; r < 16; r++) {
      const dots = Array.from({ length: N }, (_, t) => {
        let s = 0;
        for (let d = 0; d < DIM; d++) s += q8[r * DIM + d]! * x8[t * DIM + d]!;
        return s;
      });
      const kth = [...dots].sort((a, b) => b - a)[k - 1]!;
      for (let j = 0; j < k; j++) {
        const t = res.indices[r * k + j]!;
        // usearch casts the query on its own path (off by one unit in a value at most).
        expect(Math.abs(res.scores[r * k + j]! * 127 * 127 - dots[t]!)).toBeLessThan(3 * 127);
        if (dots[t]! >= kth) hit++;
      }
    }
    expect(hit / (16 * k)).toBeGreaterThan(0.95);
    await expect(
      rekindHnswFile(join(dir, 'i8.usearch'), join(dir, 'again.usearch'), 'f16', DIM),
    ).rejects.toThrow(/stores i8 vectors, not f32/);
    await expect(
      rekindHnswFile(join(dir, 'f32.usearch'), join(dir, 'bad.usearch'), 'i8', DIM + 1),
    ).rejects.toThrow(/48-dim/);
  });

  it('castI8Into: truncates toward zero after scaling by 127 / norm; a zero row stays zero', () => {
    const out = new Int8Array(6);
    castI8Into(out, Float32Array.from([3, -4, 0, 0, 0, 0]), 3);
    // 3·127/5 = 76.2 → 76; −4·127/5 = −101.6 → −101 (truncated, not rounded).
    expect([...out]).toEqual([76, -101, 0, 0, 0, 0]);
  });
});
