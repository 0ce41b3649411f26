import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { rng } from '../testing/random.js';
import type { IvfData } from './train.js';

/** What the scan reads of an index. */
type ScanData = Omit<IvfData, 'cutoffs' | 'deleted' | 'residuals' | 'params'>;
import { quantizeTables } from './tables.js';
import { ScanLane, WasmScanner } from './wasm-scan.js';
import { relaxedSimd } from '../wasm-api.js';

/** An index of `tokens` random codes (no training: the scan only reads codes and weights). */
function randomData(tokens: number, dim: number, bits: 2 | 4, seed: number): ScanData {
  const random = rng(seed);
  const bytes = (dim * bits) / 8;
  const blocks = Math.ceil(tokens / 16);
  const codes = new Uint8Array(blocks * 16 * bytes);
  // Codes of places ≥ tokens stay zero, as the layout pads them.
  for (let p = 0; p < tokens; p++) {
    for (let j = 0; j < bytes; j++) codes[((p >> 4) * bytes + j) * 16 + (p & 15)] = random() * 256;
  }
  const buckets = 1 << bits;
  const weights = Float32Array.from({ length: dim * buckets }, () => (random() - 0.5) * 0.2);
  return {
    dim,
    residualBits: bits,
    centroids: new Float32Array(dim),
    weights,
    clusterOffsets: Int32Array.of(0, tokens),
    tokens: Int32Array.from({ length: tokens }, (_, i) => i),
    codes,
  };
}

/** Place `p`'s residual dot product from the float weights, read straight from the layout. */
function exactResidual(data: ScanData, q: Float32Array, p: number): number {
  const { dim, residualBits: bits, weights, codes } = data;
  const bytes = (dim * bits) / 8;
  const perByte = 8 / bits;
  let s = 0;
  for (let d = 0; d < dim; d++) {
    const j = Math.floor(d / perByte);
    const byte = codes[((p >> 4) * bytes + j) * 16 + (p & 15)]!;
    const bucket = (byte >> ((d % perByte) * bits)) & ((1 << bits) - 1);
    s += q[d]! * weights[d * (1 << bits) + bucket]!;
  }
  return s;
}

/** Place `p`'s uint8 lookups summed one nibble at a time (what the module must return). */
function tableSum(tables: Uint8Array, data: ScanData, p: number): number {
  const bytes = (data.dim * data.residualBits) / 8;
  let s = 0;
  for (let j = 0; j < bytes; j++) {
    const byte = data.codes[((p >> 4) * bytes + j) * 16 + (p & 15)]!;
    s += tables[2 * j * 16 + (byte & 15)]! + tables[(2 * j + 1) * 16 + (byte >> 4)]!;
  }
  return s;
}

/** Residual bits and each build of the module. */
const BUILDS = [
  [2, 'plain'],
  [2, 'relaxed'],
  [4, 'plain'],
  [4, 'relaxed'],
] as const;

describe('the WebAssembly fast scan', () => {
  it('has the relaxed SIMD build on this engine (Node 20 with the flag it sets, or later)', () => {
    expect(relaxedSimd()).toBe(true);
  });

  for (const [bits, kind] of BUILDS) {
    it(`returns exactly the places whose nibble lookups reach the threshold, with their sums (${bits}-bit, ${kind})`, () => {
      const data = randomData(301, 64, bits, 7 + bits);
      const scanner = new WasmScanner(data, 0, kind);
      const random = rng(3);
      const q = Float32Array.from({ length: 64 }, () => random() - 0.5);
      quantizeTables(data, q, 0, scanner);
      const want = Array.from({ length: 304 }, (_, p) => tableSum(scanner.tables, data, p));
      const median = [...want].sort((a, b) => a - b)[152]!;
      for (const threshold of [0, median, Math.max(...want), Math.max(...want) + 1]) {
        const n = scanner.scan(0, 19, threshold);
        const places = Array.from(scanner.places.subarray(0, n));
        const sums = Array.from(scanner.sums.subarray(0, n));
        const expected = want.flatMap((s, p) => (s >= threshold ? [p] : []));
        expect(places).toEqual(expected);
        expect(sums).toEqual(expected.map((p) => want[p]));
      }
      // A block range: only its places.
      const n = scanner.scan(5, 7, 0);
      expect(Array.from(scanner.places.subarray(0, n))).toEqual(
        Array.from({ length: 32 }, (_, i) => 80 + i),
      );
    });

    it(`quantises within half a step a table, entries ≤ 127, sums ≤ 65535 (${bits}-bit, ${kind})`, () => {
      const dim = 384;
      const data = randomData(64, dim, bits, 11);
      const scanner = new WasmScanner(data, 0, kind);
      const random = rng(5);
      for (let trial = 0; trial < 5; trial++) {
        // One dimension far larger than the rest: the widest table sets the step.
        const q = Float32Array.from(
          { length: dim },
          (_, d) => (random() - 0.5) * (d === trial ? 40 : 1),
        );
        const row = quantizeTables(data, q, 0, scanner);
        const tables = (2 * dim * bits) / 8;
        expect(Math.max(...scanner.tables)).toBeLessThanOrEqual(127);
        let largest = 0;
        for (let t = 0; t < tables; t++) {
          largest += Math.max(...scanner.tables.subarray(t * 16, t * 16 + 16));
        }
        expect(largest).toBeLessThanOrEqual(65535);
        // The module's sums over 192 or 96 code bytes: the nibble sums, exactly.
        const n = scanner.scan(0, 4, 0);
        expect(Array.from(scanner.sums.subarray(0, n))).toEqual(
          Array.from({ length: 64 }, (_, p) => tableSum(scanner.tables, data, p)),
        );
        for (let p = 0; p < 64; p++) {
          const approx = row.bias + tableSum(scanner.tables, data, p) / row.scale;
          expect(Math.abs(approx - exactResidual(data, q, p))).toBeLessThanOrEqual(
            tables / 2 / row.scale + 1e-9,
          );
        }
      }
    });
  }

  for (const kind of ['plain', 'relaxed'] as const) {
    it(`selects a row's best clusters in probe order: score descending, ties by the smaller cluster (${kind})`, () => {
      const scanner = new WasmScanner(randomData(16, 64, 4, 5), 0, kind);
      const random = rng(29);
      for (const count of [1, 5, 64, 4099]) {
        // Scores on a coarse grid, so many tie; a row at an offset of a larger array.
        const at = 3 * count;
        const scores = Float32Array.from(
          { length: 5 * count },
          () => Math.round(random() * 40) / 8 - 2,
        );
        const byOrder = Array.from({ length: count }, (_, c) => c).sort(
          (a, b) => scores[at + b]! - scores[at + a]! || a - b,
        );
        for (const n of new Set([1, 2, 3, 16, 64, count - 1].filter((n) => n >= 1 && n < count))) {
          expect(Array.from(scanner.probeTop(scores, at, count, n))).toEqual(byOrder.slice(0, n));
          expect(Array.from(scanner.probeTop(scores, at, count, n, false))).toEqual(
            byOrder.slice(0, n),
          );
        }
      }
      // A long row whose sampled scores (every 16th) are its largest, so fewer than n reach the
      // sampled threshold: the whole row is selected from.
      const sampledHigh = Float32Array.from({ length: 4096 }, (_, c) =>
        c % 16 === 0 && c < 16 * 8 ? 10 - c / 1024 : random(),
      );
      const sampledOrder = Array.from({ length: 4096 }, (_, c) => c).sort(
        (a, b) => sampledHigh[b]! - sampledHigh[a]! || a - b,
      );
      expect(Array.from(scanner.probeTop(sampledHigh, 0, 4096, 64))).toEqual(
        sampledOrder.slice(0, 64),
      );
      // The same from another lane of the same memory, after the first lane's region was grown.
      const lane = new ScanLane(scanner.share, scanner.addLane());
      const scores = Float32Array.of(0.5, 2, 2, -1, 3, 2);
      expect(Array.from(lane.probeTop(scores, 0, 6, 4))).toEqual([4, 1, 2, 5]);
      expect(Array.from(scanner.probeTop(scores, 1, 5, 2))).toEqual([3, 0]);
    });
  }

  it('fills the tables of the definition: each entry its nibble value less the least, scaled, rounded half up', () => {
    // The definition, written out: every one of a nibble's 16 values computed, its least found
    // by comparing them all, `Math.round` for the rounding (the code under test derives the
    // least from each dimension's bucket range and rounds by truncation).
    // Both builds; one scanner for two indexes' buckets in turn (each row's own are used).
    for (const [bits, kind] of BUILDS) {
      const dim = 96;
      const indexes = [randomData(16, dim, bits, 21 + bits), randomData(16, dim, bits, 31 + bits)];
      const scanner = new WasmScanner(indexes[0]!, 0, kind);
      const random = rng(9);
      const buckets = 1 << bits;
      const perNibble = 4 / bits;
      const tables = (2 * dim * bits) / 8;
      for (let trial = 0; trial < 20; trial++) {
        const data = indexes[trial % 3 === 0 ? 1 : 0]!;
        // Zeros and negative zeros among the query values, and a table all of one value.
        const q = Float32Array.from({ length: dim }, (_, d) =>
          d % 17 === 0 ? 0 : d % 19 === 0 ? -0 : (random() - 0.5) * (trial + 1),
        );
        const entries: number[] = [];
        let bias = 0;
        let widest = 0;
        let total = 0;
        for (let t = 0; t < tables; t++) {
          const values = Array.from({ length: 16 }, (_, v) => {
            let s = 0;
            for (let i = 0; i < perNibble; i++) {
              const d = t * perNibble + i;
              s += q[d]! * data.weights[d * buckets + ((v >> (i * bits)) & (buckets - 1))]!;
            }
            return s;
          });
          const lo = Math.min(...values);
          const hi = Math.max(...values);
          bias += lo;
          widest = Math.max(widest, hi - lo);
          total += hi - lo;
          entries.push(...values.map((v) => v - lo));
        }
        const scale = Math.min(127 / widest, (65535 - tables / 2) / total);
        const row = quantizeTables(data, q, 0, scanner);
        expect(row.bias).toBe(bias);
        expect(row.scale).toBe(scale);
        expect(Array.from(scanner.tables.subarray(0, tables * 16))).toEqual(
          entries.map((e) => Math.round(e * scale)),
        );
      }
    }
  });

  it('is the binary its AssemblyScript source builds (scripts/build-wasm.mjs --check)', () => {
    const script = fileURLToPath(new URL('../../scripts/build-wasm.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  }, 120_000); // the compiler takes seconds
});
