import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { randomBank, rng, unitVectors } from './testing/random.js';
import { ExactTokenIndex } from './token-index.js';
import { flatTokenStore } from './token-store.js';
import { exactTopK, flatBankSource } from './top-k.js';

/**
 * The GPU scorer: onnxruntime's WebGPU execution provider. On machines without a GPU it runs
 * on Mesa's lavapipe (tools/install-lavapipe.sh, which CI runs). Without an adapter these tests
 * are skipped and counted, unless BFE_REQUIRE_WEBGPU=1 (CI), which turns that into a failure.
 */
async function probe(): Promise<string | undefined> {
  const kernel = new OrtSimilarityKernel({ executionProvider: 'webgpu' });
  try {
    const q = unitVectors(1, 8, rng(1));
    await kernel.topK(q, 1, q, 1, 8, 1);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await kernel.dispose();
  }
}
const unavailable = await probe();
const required = process.env.BFE_REQUIRE_WEBGPU === '1';

describe.skipIf(unavailable !== undefined && !required)(
  'GPU scorer on the WebGPU execution provider (needs an adapter: lavapipe from Mesa 25)',
  () => {
    const gpu = new OrtSimilarityKernel({ executionProvider: 'webgpu' });
    const cpu = new OrtSimilarityKernel({ threads: 1 });
    afterAll(async () => {
      await gpu.dispose();
      await cpu.dispose();
    });

    it('finds a WebGPU adapter', () => {
      expect(unavailable, 'no WebGPU adapter; run tools/install-lavapipe.sh').toBeUndefined();
    });

    it('places every node of its graphs on WebGPU (onnxruntime verbose placement log)', () => {
      const script = fileURLToPath(new URL('./testing/webgpu-placement.ts', import.meta.url));
      const run = spawnSync(
        process.execPath,
        ['--conditions=@bfe/source', '--import', 'tsx', script],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(run.stdout).toContain('placement-done');
      const log = run.stderr;
      // One line per session (three graphs: top-k, top-k + scores, scores only); a graph split
      // across providers would print `Node(s) placed on [CPUExecutionProvider]` instead.
      const placements = log.match(/All nodes placed on \[\w+\]\. Number of nodes: \d+/g) ?? [];
      expect(placements).toEqual([
        'All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 3',
        'All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 3',
        'All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 2',
      ]);
      expect(log).not.toMatch(/Node\(s\) placed on/);
      expect(log).not.toMatch(/kernel not found/);
    });

    it('returns the same top-k indices as the CPU path, in order, ties by smaller index', async () => {
      const random = rng(91);
      const dim = 32;
      const base = unitVectors(700, dim, random);
      // Exact duplicates make tied scores at and around the k-th place.
      const bank = new Float32Array(1000 * dim);
      bank.set(base);
      for (let i = 700; i < 1000; i++) {
        bank.set(base.subarray(((i * 7) % 700) * dim, (((i * 7) % 700) + 1) * dim), i * dim);
      }
      const queries = new Float32Array(12 * dim);
      queries.set(unitVectors(8, dim, random));
      for (let r = 8; r < 12; r++)
        queries.set(bank.subarray(r * 5 * dim, (r * 5 + 1) * dim), r * dim);
      for (const k of [1, 16, 64]) {
        const options = { k, chunkSize: 256 };
        const a = await exactTopK(gpu, queries, 12, flatBankSource(bank, dim), options);
        const b = await exactTopK(cpu, queries, 12, flatBankSource(bank, dim), options);
        expect(Array.from(a.indices)).toEqual(Array.from(b.indices));
        expect(Array.from(a.values)).toEqual(Array.from(b.values));
        for (let r = 0; r < 12; r++) {
          for (let j = 1; j < k; j++) {
            const [v0, v1] = [a.values[r * k + j - 1]!, a.values[r * k + j]!];
            expect(
              v0 > v1 || (v0 === v1 && a.indices[r * k + j - 1]! < a.indices[r * k + j]!),
            ).toBe(true);
          }
        }
      }
    });

    it('searches the token index like the CPU kernel (hits and per-memory bests)', async () => {
      const random = rng(92);
      const memories = randomBank(40, 30, 24, random, 1);
      const queries = randomBank(5, 12, 24, random, 1);
      const side = {
        tokens: flatTokenStore(memories.tokenVectors, 24),
        tokenOffsets: memories.tokenOffsets,
      };
      const rows = queries.tokenOffsets[5]!;
      const q = queries.tokenVectors.subarray(0, rows * 24);
      const options = {
        memories: Int32Array.from({ length: 40 }, (_, i) => i),
        bestPerMemory: true,
      };
      const a = await new ExactTokenIndex(side, gpu).search(q, rows, 16, options);
      const b = await new ExactTokenIndex(side, cpu).search(q, rows, 16, options);
      expect(Array.from(a.values)).toEqual(Array.from(b.values));
      expect(Array.from(a.tokens)).toEqual(Array.from(b.tokens));
      for (let i = 0; i < a.best!.length; i++) expect(a.best![i]).toBeCloseTo(b.best![i]!, 5);
    });
  },
);
