import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBankedHnsw } from './banked.js';
import { buildHnsw, hnswFileKind, insertOrder, loadHnsw, makeIndex, releaseIndex } from './hnsw.js';

const DIM = 32;
const N = 2000;
const params = { M: 16, efConstruction: 64, efSearch: 64 };

function unitVectors(n: number, seed: number): Float32Array {
  const rng = xoroshiro128plus(seed);
  const x = new Float32Array(n * DIM);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let d = 0; d < DIM; d++) s += (x[i * DIM + d] = uniformFloat64(rng) - 0.5) ** 2;
    for (let d = 0; d < DIM; d++) x[i * DIM + d] = x[i * DIM + d]! / Math.sqrt(s);
  }
  return x;
}

/** Brute-force top-k token indices per row, restricted by `keep`. */
function exactTopK(
  x: Float32Array,
  q: Float32Array,
  rows: number,
  k: number,
  keep: (t: number) => boolean,
): number[][] {
  const out: number[][] = [];
  for (let r = 0; r < rows; r++) {
    const scored: [number, number][] = [];
    for (let t = 0; t < N; t++) {
      if (!keep(t)) continue;
      let s = 0;
      for (let d = 0; d < DIM; d++) s += q[r * DIM + d]! * x[t * DIM + d]!;
      scored.push([s, t]);
    }
    scored.sort((a, b) => b[0] - a[0]);
    out.push(scored.slice(0, k).map((p) => p[1]));
  }
  return out;
}

function recall(got: Int32Array, k: number, want: number[][]): number {
  let hit = 0;
  let total = 0;
  want.forEach((w, r) => {
    const g = new Set(got.subarray(r * k, (r + 1) * k));
    for (const t of w) if (g.has(t)) hit++;
    total += w.length;
  });
  return hit / total;
}

const x = unitVectors(N, 3);
const q = unitVectors(20, 4);
const dirs: string[] = [];
afterAll(async () => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('hnsw', () => {
  it('finds the exact inner-product top-k with high recall, scores equal to the dot products', async () => {
    const index = await buildHnsw(x, N, DIM, params, { threads: 1 });
    expect(index.size).toBe(N);
    const res = index.search(q, 20, 10);
    expect(
      recall(
        res.indices,
        10,
        exactTopK(x, q, 20, 10, () => true),
      ),
    ).toBeGreaterThan(0.95);
    for (let r = 0; r < 20; r++) {
      const t = res.indices[r * 10]!;
      let dot = 0;
      for (let d = 0; d < DIM; d++) dot += q[r * DIM + d]! * x[t * DIM + d]!;
      expect(res.scores[r * 10]!).toBeCloseTo(dot, 5);
      expect(res.scores[r * 10]!).toBeGreaterThanOrEqual(res.scores[r * 10 + 9]!);
    }
    index.dispose();
    expect(() => index.size).toThrow(/dispose/);
  });

  it('inserts rows in a seeded shuffled order: a fixed permutation, keys still row indices', async () => {
    const order = insertOrder(1000);
    expect(Array.from(order).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i),
    );
    expect(Array.from(insertOrder(1000))).toEqual(Array.from(order)); // the same every time
    expect(Array.from(order.subarray(0, 8))).not.toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Array.from(insertOrder(1000, 7))).not.toEqual(Array.from(order));
    // Each stored row finds itself under its own row index, whichever order it was added in.
    for (const insert of ['shuffled', 'given'] as const) {
      const index = await buildHnsw(x, N, DIM, params, { threads: 1, insert });
      const res = index.search(x.subarray(0, 20 * DIM), 20, 1);
      expect(Array.from(res.indices)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      index.dispose();
    }
  });

  it('releases the native graph at once (usearch resets it; the binding has no close)', () => {
    const index = makeIndex(DIM, params, 'f32');
    const keys = new BigUint64Array(N);
    for (let i = 0; i < N; i++) keys[i] = BigInt(i);
    index.add(keys, x, 1);
    expect(index.size()).toBe(N);
    expect(index.capacity()).toBeGreaterThanOrEqual(N);
    releaseIndex(index);
    // Nodes, vectors and keys are gone: a usearch that stops resetting before it reads fails here.
    expect(index.size()).toBe(0);
    expect(index.capacity()).toBeLessThan(N);
    expect(index.contains(0n)).toBe(false);
  });

  it('saves and loads an index that answers the same', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bfe-hnsw-'));
    dirs.push(dir);
    const index = await buildHnsw(x, N, DIM, params, { threads: 1 });
    await index.save(join(dir, 'x.usearch'));
    const loaded = await loadHnsw(join(dir, 'x.usearch'), DIM, params, { threads: 1 });
    expect(loaded.size).toBe(N);
    expect(loaded.search(q, 3, 5).indices).toEqual(index.search(q, 3, 5).indices);
    await expect(loadHnsw(join(dir, 'x.usearch'), DIM + 1, params)).rejects.toThrow(/dim/);
  });

  it('builds reproducibly by default: two builds write the same bytes, whatever the search threads', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bfe-hnsw-'));
    dirs.push(dir);
    const files: Buffer[] = [];
    for (const threads of [0, 2]) {
      const index = await buildHnsw(x, N, DIM, params, { threads, kind: 'i8' });
      await index.save(join(dir, `${threads}.usearch`));
      // One thread's search state (the build's): all-core searches are capped, not refused.
      expect(index.search(q, 20, 5).indices).not.toContain(-1);
      index.dispose();
      files.push(await readFile(join(dir, `${threads}.usearch`)));
    }
    expect(files[1]!.equals(files[0]!)).toBe(true);
    await expect(buildHnsw(x, N, DIM, params, { buildThreads: 1.5 })).rejects.toThrow(
      /buildThreads/,
    );
  });

  it.each(['f32', 'f16', 'i8'] as const)(
    '%s graphs: the file stores that kind, loads back the same, scores near the dot products',
    async (kind) => {
      const dir = await mkdtemp(join(tmpdir(), 'bfe-hnsw-'));
      dirs.push(dir);
      const index = await buildHnsw(x, N, DIM, params, { threads: 1, kind });
      expect(index.kind).toBe(kind);
      const res = index.search(q, 20, 10);
      expect(
        recall(
          res.indices,
          10,
          exactTopK(x, q, 20, 10, () => true),
        ),
      ).toBeGreaterThan(0.9);
      for (let r = 0; r < 20; r++) {
        const t = res.indices[r * 10]!;
        let dot = 0;
        for (let d = 0; d < DIM; d++) dot += q[r * DIM + d]! * x[t * DIM + d]!;
        // i8: the cosine of the int8 casts, within a few rounding units of 1/127.
        expect(Math.abs(res.scores[r * 10]! - dot)).toBeLessThan(kind === 'i8' ? 0.05 : 1e-3);
      }
      const path = join(dir, `${kind}.usearch`);
      await index.save(path);
      expect(await hnswFileKind(path)).toBe(kind);
      const loaded = await loadHnsw(path, DIM, params, { threads: 1, kind });
      expect(loaded.kind).toBe(kind);
      expect(loaded.search(q, 20, 10).indices).toEqual(res.indices);
    },
  );

  it('smaller kinds give smaller files; loadHnsw refuses a file of another kind', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bfe-hnsw-'));
    dirs.push(dir);
    const bytes: Record<string, number> = {};
    for (const kind of ['f32', 'f16', 'i8'] as const) {
      const path = join(dir, `${kind}.usearch`);
      await (await buildHnsw(x, N, DIM, params, { threads: 1, kind })).save(path);
      bytes[kind] = (await stat(path)).size;
    }
    // The vectors shrink by 2 · N · DIM and N · DIM bytes; the graph links stay.
    expect(bytes.f32! - bytes.f16!).toBeGreaterThanOrEqual(2 * N * DIM);
    expect(bytes.f16! - bytes.i8!).toBeGreaterThanOrEqual(N * DIM);
    await expect(loadHnsw(join(dir, 'i8.usearch'), DIM, params)).rejects.toThrow(/stores i8/);
    await expect(loadHnsw(join(dir, 'f32.usearch'), DIM, params, { kind: 'f16' })).rejects.toThrow(
      /stores f32 vectors, expected f16/,
    );
    await expect(hnswFileKind(join(dir, 'missing.usearch'))).rejects.toThrow();
  });

  it('a filter returns only allowed tokens, k of them, with high recall', async () => {
    const index = await buildHnsw(x, N, DIM, params, { threads: 1 });
    const tokenMemory = Int32Array.from({ length: N }, (_, t) => Math.floor(t / 20)); // 100 memories
    const allowed = new Set([3, 17, 42, 77, 91]); // 100 tokens, 5 %
    const res = index.search(q, 20, 10, { tokenMemory, allowedMemories: allowed });
    expect([...res.indices].every((t) => allowed.has(tokenMemory[t]!))).toBe(true);
    const want = exactTopK(x, q, 20, 10, (t) => allowed.has(tokenMemory[t]!));
    expect(recall(res.indices, 10, want)).toBeGreaterThan(0.9);
    // An empty allowed set searches the whole index and returns empty slots.
    const none = index.search(q, 2, 4, { tokenMemory, allowedMemories: new Int32Array(0) });
    expect([...none.indices]).toEqual(new Array(8).fill(-1));
  });

  it('per-bank indexes answer with bank-wide token indices from the asked bank only', async () => {
    const tokenBank = Int32Array.from({ length: N }, (_, t) => t % 4);
    const banked = await buildBankedHnsw(x, N, DIM, tokenBank, params, { threads: 1 });
    expect(banked.banks).toEqual([0, 1, 2, 3]);
    expect(banked.bankSize(2)).toBe(N / 4);
    const res = banked.search(q, 20, 10, 2);
    expect([...res.indices].every((t) => t % 4 === 2)).toBe(true);
    expect(
      recall(
        res.indices,
        10,
        exactTopK(x, q, 20, 10, (t) => t % 4 === 2),
      ),
    ).toBeGreaterThan(0.95);
    expect([...banked.search(q, 1, 3, 9).indices]).toEqual([-1, -1, -1]);
  });
});
