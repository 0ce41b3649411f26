import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArtifactCorruptError } from '@bfe/core';
import { readChunkFiles, windowPools, writeChunkFiles } from './files.js';
import type { ChunkPassResult } from './pass.js';

const DIM = 4;
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** Seeded floats with every bit pattern a float32 can take in [−1, 1). */
function floats(n: number, seed: number): Float32Array {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 31 - 1;
  });
}

// Memories a, b, c: b is cut into 3 windows, the others fit one window.
const ids = ['a', 'b', 'c'];
const pass: ChunkPassResult = {
  size: 8,
  dim: DIM,
  lengths: Int32Array.of(5, 20, 8),
  owner: Int32Array.of(1, 1, 1),
  first: Int32Array.of(0, 6, 12),
  count: Int32Array.of(6, 6, 6),
  vectors: floats(3 * DIM, 1),
};
const bank = { ids, pooled: floats(3 * DIM, 2), dim: DIM };

async function written(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'bfe-chunks-'));
  dirs.push(dir);
  await writeChunkFiles(dir, ids, pass, { name: 'm', pooling: 'mean' });
  return dir;
}

describe('chunk files', () => {
  it('round-trip the layout and the window vectors bit for bit', async () => {
    const { layout, vectors } = await readChunkFiles(await written());
    expect(layout).toMatchObject({ size: 8, dim: DIM, memories: 3, windows: 3, longest: 20 });
    expect(layout.cut).toEqual([{ id: 'b', tokens: 20, first: [0, 6, 12], count: [6, 6, 6] }]);
    expect(new Uint32Array(vectors.buffer)).toEqual(new Uint32Array(pass.vectors.buffer));
  });

  it('give a one-window memory exactly its bank pooled vector, a cut one its windows', async () => {
    const { layout, vectors } = await readChunkFiles(await written());
    // The bank's rows in another order than the pass's: pools follow the bank.
    const order = [2, 0, 1];
    const pooled = new Float32Array(3 * DIM);
    order.forEach((r, i) => pooled.set(bank.pooled.subarray(r * DIM, (r + 1) * DIM), i * DIM));
    const pools = windowPools(
      { ids: order.map((r) => ids[r]!), pooled, dim: DIM },
      layout,
      vectors,
    );
    expect([...pools.offsets]).toEqual([0, 1, 2, 5]);
    const bits = new Uint32Array(pools.vectors.buffer);
    const bankBits = new Uint32Array(bank.pooled.buffer);
    expect(bits.subarray(0, DIM)).toEqual(bankBits.subarray(2 * DIM, 3 * DIM)); // c
    expect(bits.subarray(DIM, 2 * DIM)).toEqual(bankBits.subarray(0, DIM)); // a
    expect(bits.subarray(2 * DIM)).toEqual(new Uint32Array(pass.vectors.buffer)); // b's 3
  });

  it('refuse a cut memory that is not in the bank, and a short vector file', async () => {
    const dir = await written();
    const { layout, vectors } = await readChunkFiles(dir);
    const other = { ids: ['a', 'c'], pooled: bank.pooled.subarray(0, 2 * DIM), dim: DIM };
    expect(() => windowPools(other, layout, vectors)).toThrow(ArtifactCorruptError);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(join(dir, 'chunk-vectors.f32'), new Uint8Array(8));
    await expect(readChunkFiles(dir)).rejects.toThrow(/8 bytes for 3 windows/);
  });
});
