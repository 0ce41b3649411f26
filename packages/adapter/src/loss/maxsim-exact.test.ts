import { afterAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  finishMaxSimScores,
  maxSim,
  maxSimBackward,
  maxSimInto,
  queryLoss,
  type MaxSimResult,
  type TokenSegments,
} from './loss.js';
import {
  maxSimBackwardBlocked,
  maxSimFromSimilarities,
  maxTokenNorm,
  rowSlack,
  similarityErrorFactor,
} from './maxsim-exact.js';
import {
  adapterBackward,
  applyAdapterInto,
  createForwardCache,
  initAdapterParams,
} from '../model.js';
import { lossSumOrt } from './loss-ort.js';
import { kernelGraph } from '../kernels/kernel-graph.js';
import { OrtMaxSim, type ExactKernel } from '../kernels/ort-maxsim.js';
import { Prng } from '../prng.js';
import { relativeError } from '../testing/reference.js';
import { syntheticQueries } from '../testing/synthetic.js';
import { wasmAdapterBackward } from '../kernels/wasm-forward.js';
import { WasmKernel } from '../kernels/wasm-kernel.js';

interface Problem {
  readonly dim: number;
  readonly rows: number;
  readonly query: Float64Array;
  readonly segments: TokenSegments & { readonly tokenVectors: Float32Array };
  readonly tokens: number;
}

/**
 * Random unit tokens in memories of 0–7 tokens, with traps for a float32 argmax: exact
 * duplicates (ties: the smaller index must win), copies one float32 ulp apart in one entry
 * (closer than float32 scores can tell), and a token a bit longer than unit.
 */
function problem(seed: number, dim: number, rows: number): Problem {
  const prng = new Prng(seed);
  const lengths = [3, 0, 7, 1, 5, 2, 6, 4, 0, 7];
  const offsets = new Int32Array(lengths.length + 1);
  lengths.forEach((n, m) => (offsets[m + 1] = offsets[m]! + n));
  const tokens = offsets[lengths.length]!;
  const x = new Float32Array(tokens * dim);
  for (let t = 0; t < tokens; t++) {
    let ss = 0;
    for (let k = 0; k < dim; k++) {
      x[t * dim + k] = prng.normal();
      ss += x[t * dim + k]! ** 2;
    }
    const scale = (t % 11 === 5 ? 1.5 : 1) / Math.sqrt(ss);
    for (let k = 0; k < dim; k++) x[t * dim + k] = x[t * dim + k]! * scale;
  }
  for (let m = 0; m < lengths.length; m++) {
    const start = offsets[m]!;
    const end = offsets[m + 1]!;
    if (end - start < 3) continue;
    x.copyWithin((start + 2) * dim, start * dim, (start + 1) * dim); // tie: token 2 = token 0
    if (end - start >= 5) {
      x.copyWithin((start + 4) * dim, (start + 1) * dim, (start + 2) * dim);
      const k = (start + 4) * dim + (m % dim);
      const bits = new Uint32Array(x.buffer, k * 4, 1);
      bits[0]! += 1; // one ulp away from token 1
    }
  }
  // query rows: near copies of memory tokens (so the traps are the maxima), float64
  const query = new Float64Array(rows * dim);
  for (let i = 0; i < rows; i++) {
    const t = offsets[(2 * i) % lengths.length]! + (i % 3 === 0 ? 1 : 0);
    for (let k = 0; k < dim; k++) {
      query[i * dim + k] = (t < tokens ? x[t * dim + k]! : 0) + 1e-3 * prng.normal();
    }
  }
  return { dim, rows, query, segments: { tokenVectors: x, memoryOffsets: offsets }, tokens };
}

function empty(p: Problem): MaxSimResult {
  const memories = p.segments.memoryOffsets.length - 1;
  return {
    rows: p.rows,
    memories,
    scores: new Float64Array(memories),
    best: new Float64Array(p.rows * memories),
    argmax: new Int32Array(p.rows * memories),
  };
}

/** float32 similarities as a float32 GEMM would give them: float32 products and sums. */
function float32Sims(p: Problem): Float32Array {
  const { dim, rows, query, tokens } = p;
  const x = p.segments.tokenVectors;
  const sims = new Float32Array(tokens * rows);
  for (let t = 0; t < tokens; t++) {
    for (let i = 0; i < rows; i++) {
      let s = 0;
      for (let k = dim - 1; k >= 0; k--) {
        s = Math.fround(s + Math.fround(Math.fround(query[i * dim + k]!) * x[t * dim + k]!));
      }
      sims[t * rows + i] = s;
    }
  }
  return sims;
}

/**
 * Adversarial similarities: the reference's score moved by `scale · δ` against the reference's
 * argmax of each row and memory (it down, every other token up) — the worst a kernel within
 * the error bound `δ` could do, at `scale < 1`.
 */
function adversarialSims(p: Problem, reference: MaxSimResult, scale: number): Float32Array {
  const { dim, rows, query, tokens } = p;
  const x = p.segments.tokenVectors;
  const offsets = p.segments.memoryOffsets;
  const norm = maxTokenNorm(x, tokens, dim);
  const sims = new Float32Array(tokens * rows);
  for (let m = 0; m + 1 < offsets.length; m++) {
    for (let t = offsets[m]!; t < offsets[m + 1]!; t++) {
      for (let i = 0; i < rows; i++) {
        let s = 0;
        let qq = 0;
        for (let k = 0; k < dim; k++) {
          s += query[i * dim + k]! * x[t * dim + k]!;
          qq += query[i * dim + k]! ** 2;
        }
        const delta = similarityErrorFactor(dim) * Math.sqrt(qq) * norm;
        const argmax = reference.argmax[i * reference.memories + m];
        sims[t * rows + i] = s + (t === argmax ? -1 : 1) * scale * delta;
      }
    }
  }
  return sims;
}

const shapes = [
  { dim: 24, rows: 1 },
  { dim: 24, rows: 3 },
  { dim: 24, rows: 4 },
  { dim: 23, rows: 5 },
  { dim: 24, rows: 8 },
  { dim: 31, rows: 9 },
];

describe('maxSimFromSimilarities', () => {
  it('equals maxSimInto bit for bit from float32 GEMM-like similarities', () => {
    for (const [n, shape] of shapes.entries()) {
      const p = problem(n + 1, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      const got = maxSimFromSimilarities(
        empty(p),
        float32Sims(p),
        p.query,
        p.dim,
        p.segments,
        norm,
      );
      expect(got).toEqual(reference);
      expect(Array.from(reference.argmax)).toContain(-1); // empty memories are in the problem
    }
  });

  it('equals maxSimInto bit for bit against any similarities within the bound', () => {
    for (const [n, shape] of shapes.entries()) {
      const p = problem(100 + n, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      const sims = adversarialSims(p, reference, 0.9);
      const got = maxSimFromSimilarities(empty(p), sims, p.query, p.dim, p.segments, norm);
      expect(got).toEqual(reference);
    }
  });

  it('would pick other tokens beyond the bound (the traps are real)', () => {
    let differ = 0;
    for (const [n, shape] of shapes.entries()) {
      const p = problem(100 + n, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      const sims = adversarialSims(p, reference, 3);
      const got = maxSimFromSimilarities(empty(p), sims, p.query, p.dim, p.segments, norm);
      if (got.argmax.some((t, j) => t !== reference.argmax[j])) differ += 1;
    }
    expect(differ).toBeGreaterThan(0);
  });

  it('keeps the smaller token index on exact ties, as the reference', () => {
    const p = problem(7, 24, 4);
    const memories = p.segments.memoryOffsets.length - 1;
    // every row equal to token 0 of memory 0, which token 2 duplicates
    const x = p.segments.tokenVectors;
    for (let i = 0; i < p.rows; i++) {
      for (let k = 0; k < p.dim; k++) p.query[i * p.dim + k] = x[k]!;
    }
    const norm = maxTokenNorm(x, p.tokens, p.dim);
    const got = maxSimFromSimilarities(empty(p), float32Sims(p), p.query, p.dim, p.segments, norm);
    for (let i = 0; i < p.rows; i++) expect(got.argmax[i * memories]).toBe(0);
    expect(got).toEqual(maxSimInto(empty(p), p.query, p.dim, p.segments));
  });

  it('refuses NaN similarities instead of inventing a maximum', () => {
    const p = problem(3, 24, 2);
    const sims = float32Sims(p).fill(Number.NaN);
    expect(() => maxSimFromSimilarities(empty(p), sims, p.query, p.dim, p.segments, 1)).toThrow(
      /no candidate for row 0, memory 0/,
    );
  });
});

describe('maxSimBackwardBlocked', () => {
  it('equals maxSimBackward bit for bit (dims beside multiples of 8, zero weights, empty memories)', () => {
    for (const [n, shape] of shapes.entries()) {
      const p = problem(300 + n, shape.dim, shape.rows);
      const result = maxSim(p.query, p.rows, p.dim, p.segments);
      const prng = new Prng(n);
      const weights = Float64Array.from({ length: result.memories }, (_, m) =>
        m % 4 === 1 ? 0 : prng.normal() * 10 ** ((m % 5) - 3),
      );
      const reference = maxSimBackward(
        result,
        weights,
        p.dim,
        p.segments,
        new Float64Array(p.rows * p.dim),
      );
      const got = maxSimBackwardBlocked(
        result,
        weights,
        p.dim,
        p.segments,
        new Float64Array(p.rows * p.dim),
      );
      expect(got).toEqual(reference);
      expect(reference.some((g) => g !== 0)).toBe(true);
    }
  });
});

/**
 * The WebAssembly kernel's exact maxima of `p` from `sims` (this query's rows in columns
 * `offset ..` of a `stride`-column matrix; other columns hold a huge decoy that must be ignored).
 */
function wasmExact(p: Problem, sims: Float32Array, norm: number, pad = 0): MaxSimResult {
  const wasm = new WasmKernel();
  const { dim, rows, tokens } = p;
  const stride = rows + 2 * pad;
  const x = wasm.alloc(tokens * dim * 4);
  wasm.f32(x, tokens * dim).set(p.segments.tokenVectors.subarray(0, tokens * dim));
  const at = wasm.alloc(tokens * stride * 4);
  const wide = wasm.f32(at, tokens * stride).fill(1e30);
  for (let t = 0; t < tokens; t++) {
    wide.set(sims.subarray(t * rows, (t + 1) * rows), t * stride + pad);
  }
  const out = empty(p);
  const slack = rowSlack(p.query, rows, dim, norm);
  const columns = { stride, offset: pad };
  wasm.maxSimExact(out, at, columns, p.query, dim, x, p.segments.memoryOffsets, slack);
  return finishMaxSimScores(out);
}

describe('WasmKernel (WebAssembly SIMD exact maxima and backward)', () => {
  it('equals maxSimInto bit for bit from float32 GEMM-like similarities, in any columns', () => {
    for (const [n, shape] of shapes.entries()) {
      const p = problem(n + 1, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      expect(wasmExact(p, float32Sims(p), norm)).toEqual(reference);
      expect(wasmExact(p, float32Sims(p), norm, 3)).toEqual(reference);
    }
  });

  it('equals maxSimInto bit for bit against any similarities within the bound', () => {
    for (const [n, shape] of shapes.entries()) {
      const p = problem(100 + n, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      expect(wasmExact(p, adversarialSims(p, reference, 0.9), norm, 1)).toEqual(reference);
    }
  });

  it('follows the JavaScript path beyond the bound too (same candidates, same picks)', () => {
    let differ = 0;
    for (const [n, shape] of shapes.entries()) {
      const p = problem(100 + n, shape.dim, shape.rows);
      const reference = maxSimInto(empty(p), p.query, p.dim, p.segments);
      const norm = maxTokenNorm(p.segments.tokenVectors, p.tokens, p.dim);
      const sims = adversarialSims(p, reference, 3);
      const got = wasmExact(p, sims, norm);
      expect(got).toEqual(maxSimFromSimilarities(empty(p), sims, p.query, p.dim, p.segments, norm));
      if (got.argmax.some((t, j) => t !== reference.argmax[j])) differ += 1;
    }
    expect(differ).toBeGreaterThan(0);
  });

  it('keeps the smaller token index on exact ties, and refuses NaN similarities', () => {
    const p = problem(7, 24, 4);
    const x = p.segments.tokenVectors;
    for (let i = 0; i < p.rows; i++) {
      for (let k = 0; k < p.dim; k++) p.query[i * p.dim + k] = x[k]!;
    }
    const norm = maxTokenNorm(x, p.tokens, p.dim);
    const got = wasmExact(p, float32Sims(p), norm);
    for (let i = 0; i < p.rows; i++) expect(got.argmax[i * got.memories]).toBe(0);
    expect(got).toEqual(maxSimInto(empty(p), p.query, p.dim, p.segments));
    const q = problem(3, 24, 2);
    expect(() => wasmExact(q, float32Sims(q).fill(Number.NaN), 1)).toThrow(
      /no candidate for row 0, memory 0/,
    );
  });

  it('gives each query of a batch its own result bit for bit (maxSimExactMany)', () => {
    // one problem of 14 rows cut into queries of 1, 4, 5 and 4 rows side by side
    const p = problem(77, 31, 14);
    const { dim, tokens } = p;
    const cuts = [0, 1, 5, 10, 14];
    const sims = float32Sims(p);
    const norm = maxTokenNorm(p.segments.tokenVectors, tokens, dim);
    const wasm = new WasmKernel();
    const x = wasm.alloc(tokens * dim * 4);
    wasm.f32(x, tokens * dim).set(p.segments.tokenVectors.subarray(0, tokens * dim));
    const at = wasm.alloc(sims.byteLength);
    wasm.f32(at, sims.length).set(sims);
    const items = cuts.slice(1).map((end, j) => {
      const rows = end - cuts[j]!;
      const query = p.query.slice(cuts[j]! * dim, end * dim);
      const out = empty({ ...p, rows, query });
      return { out, query, offset: cuts[j]!, slack: rowSlack(query, rows, dim, norm) };
    });
    wasm.maxSimExactMany(at, 14, dim, x, p.segments.memoryOffsets, items);
    for (const { out, query } of items) {
      const reference = maxSimInto(empty({ ...p, rows: out.rows, query }), query, dim, p.segments);
      expect(finishMaxSimScores(out)).toEqual(reference);
    }
  });

  it('gives adapterBackward bit for bit (odd rank and dim, a zero row, a row below ε)', () => {
    for (const [dim, rank, rows] of [
      [23, 3, 5],
      [384, 32, 7],
    ] as const) {
      const prng = new Prng(dim + rank);
      const params = initAdapterParams(dim, rank, 4, 0.05);
      params.b.forEach((_, k) => (params.b[k] = 0.03 * prng.normal()));
      const tokens = Float32Array.from({ length: rows * dim }, () => prng.normal());
      tokens.fill(0, dim, 2 * dim); // row 1 is zero
      const cache = createForwardCache(rows, dim, rank);
      applyAdapterInto(new Float64Array(rows * dim), params, tokens, rows, cache);
      cache.zNorm[2] = 1e-13; // row 2 takes the ε branch
      const gradOut = Float64Array.from({ length: rows * dim }, () => prng.normal());
      gradOut[5] = 0;
      const start = Float64Array.from({ length: rank * dim }, () => prng.normal());
      const expected = { a: start.slice(), b: start.slice().reverse() };
      adapterBackward(params, tokens, rows, cache, gradOut, expected.a, expected.b);
      const got = { a: start.slice(), b: start.slice().reverse() };
      wasmAdapterBackward(
        new WasmKernel(),
        params,
        [{ tokens, rows, cache, gradOut }],
        got.a,
        got.b,
      );
      expect(got).toEqual(expected);
    }
  });

  it('reuses freed blocks, coalesces them, and grows its memory keeping the contents', () => {
    const wasm = new WasmKernel();
    const a = wasm.alloc(100);
    const b = wasm.alloc(1000);
    const c = wasm.alloc(10);
    expect(new Set([a, b, c]).size).toBe(3);
    expect([a, b, c].every((ptr) => ptr % 64 === 0)).toBe(true);
    wasm.f64(c, 1)[0] = 42;
    wasm.free(a, 100);
    wasm.free(b, 1000);
    expect(wasm.alloc(1100)).toBe(a); // a and b coalesced
    const before = wasm.memory.buffer.byteLength;
    const big = wasm.alloc(3 * before);
    expect(wasm.memory.buffer.byteLength).toBeGreaterThan(before);
    expect(wasm.f64(c, 1)[0]).toBe(42);
    wasm.free(big, 3 * before);
    expect(wasm.alloc(64)).toBe(big); // the top of the heap came back
    expect(() => wasm.alloc(5 * 2 ** 30)).toThrow(RangeError);
  });

  it('is the binary its AssemblyScript source builds (scripts/build-wasm.mjs --check)', () => {
    const script = fileURLToPath(new URL('../../scripts/build-wasm.mjs', import.meta.url));
    const run = spawnSync(process.execPath, [script, '--check'], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
  }, 120_000); // the compiler takes seconds
});

describe.each<ExactKernel>(['wasm', 'js'])(
  'OrtMaxSim (onnxruntime MatMul + exact maxima in %s)',
  (exact) => {
    const kernels = new Map<number, Promise<OrtMaxSim>>();
    const kernel = (dim: number): Promise<OrtMaxSim> => {
      if (!kernels.has(dim))
        kernels.set(dim, OrtMaxSim.create(kernelGraph(dim), dim, undefined, exact));
      return kernels.get(dim)!;
    };
    afterAll(async () => {
      for (const k of kernels.values()) await (await k).release();
    });

    it('equals maxSim bit for bit, traps included', async () => {
      for (const [n, shape] of shapes.entries()) {
        const p = problem(200 + n, shape.dim, shape.rows);
        const ort = await kernel(p.dim);
        const got = await ort.maxSim(p.query, p.rows, p.segments);
        expect(got).toEqual(maxSim(p.query, p.rows, p.dim, p.segments));
      }
    });

    it('gives the same result bit for bit at 1, 2 and 3 onnxruntime threads', async () => {
      const dim = 384;
      const [q] = syntheticQueries({
        dim,
        queries: 1,
        queryTokens: 7,
        memories: 300,
        memoryTokens: 20,
        queriesPerBank: 1,
        positives: 1,
        distortion: 1,
        noise: 2,
        seed: 11,
        prefix: 't-',
      });
      const query = Float64Array.from(q!.tokens);
      const reference = maxSim(query, 7, dim, q!.candidates);
      for (const threads of [1, 2, 3]) {
        const kernel = await OrtMaxSim.create(kernelGraph(dim, threads), dim, undefined, exact);
        try {
          expect(await kernel.maxSim(query, 7, q!.candidates)).toEqual(reference);
        } finally {
          await kernel.release();
        }
      }
    });

    it('keeps its set cache within budget, least recently used out, results unchanged', async () => {
      const sets = [problem(401, 24, 4), problem(402, 24, 4), problem(403, 24, 4)];
      const bytes = sets[0]!.tokens * 24 * 4;
      const small = await OrtMaxSim.create(kernelGraph(24), 24, 2 * bytes, exact);
      try {
        for (const p of [...sets, sets[0]!, sets[2]!, sets[1]!]) {
          const got = await small.maxSim(p.query, p.rows, p.segments);
          expect(got).toEqual(maxSim(p.query, p.rows, p.dim, p.segments));
          expect(small.cached.bytes).toBeLessThanOrEqual(2 * bytes);
        }
        expect(small.cached.sets).toBe(2);
      } finally {
        await small.release();
      }
    });

    it('keeps empty memories out of the gradient and in the softmax (dims beside multiples of 16)', async () => {
      for (const dim of [9, 24, 37]) {
        const base = syntheticQueries({
          dim,
          queries: 6,
          queryTokens: 4,
          memories: 9,
          memoryTokens: 5,
          queriesPerBank: 6,
          positives: 2,
          distortion: 1,
          noise: 2,
          seed: 11,
          prefix: 'e-',
        });
        // one candidate set with an empty first, middle and last memory
        const { tokenVectors, memoryOffsets } = base[0]!.candidates;
        const total = memoryOffsets[memoryOffsets.length - 1]!;
        const offsets = [
          0,
          ...Array.from(memoryOffsets).slice(0, 5),
          ...Array.from(memoryOffsets).slice(4),
          total,
        ];
        const candidates = { tokenVectors, memoryOffsets: Int32Array.from(offsets) };
        const shift = (m: number): number => (m < 4 ? m + 1 : m + 2);
        const run = base.map((q) => ({
          ...q,
          rows: q.tokens.length / dim,
          candidates,
          positives: q.positives.map(shift),
        }));
        const params = initAdapterParams(dim, 4, 3, 0.05);
        params.b.forEach((_, k) => (params.b[k] = 0.03 * Math.cos(k)));
        const reference = { a: new Float64Array(4 * dim), b: new Float64Array(dim * 4) };
        let expected = 0;
        for (const query of run) expected += queryLoss(params, query, 0.07, reference);
        const grads = { a: new Float64Array(4 * dim), b: new Float64Array(dim * 4) };
        expect(await lossSumOrt(await kernel(dim), params, run, 0.07, grads)).toBe(expected);
        expect(relativeError(grads.a, reference.a)).toBeLessThan(1e-13);
        expect(relativeError(grads.b, reference.b)).toBeLessThan(1e-13);
        if (exact === 'js') expect(grads).toEqual(reference);
      }
    });

    // the losses bit for bit on both; the gradient bit for bit in JavaScript, within float64
    // rounding with MaxSim's backward fused into the WebAssembly maxima (`assembly/fused.ts`)
    it('gives the loss sum bit for bit and the gradient of a query run at d = 384 (batched MatMuls)', async () => {
      const dim = 384;
      // 40 queries × 6 rows on 2 banks, one bank's 120 rows split into MatMuls of ≤ 192 columns
      // together with the repeats below
      const queries = syntheticQueries({
        dim,
        queries: 40,
        queryTokens: 6,
        memories: 40,
        memoryTokens: 12,
        queriesPerBank: 20,
        positives: 2,
        distortion: 1,
        noise: 2,
        seed: 5,
        prefix: 'o-',
      }).map((q) => ({ ...q, rows: q.tokens.length / dim }));
      const run = [...queries, ...queries.slice(0, 15), queries[3]!];
      const params = initAdapterParams(dim, 8, 3, 0.02);
      params.b.forEach((_, k) => (params.b[k] = 0.01 * Math.sin(k))); // a non-identity adapter
      const ort = await kernel(dim);
      const reference = { a: new Float64Array(8 * dim), b: new Float64Array(dim * 8) };
      let expected = 0;
      for (const query of run) expected += queryLoss(params, query, 0.07, reference);
      const grads = { a: new Float64Array(8 * dim), b: new Float64Array(dim * 8) };
      expect(await lossSumOrt(ort, params, run, 0.07, grads)).toBe(expected);
      if (exact === 'js') expect(grads).toEqual(reference);
      else {
        expect(relativeError(grads.a, reference.a)).toBeLessThan(1e-13);
        expect(relativeError(grads.b, reference.b)).toBeLessThan(1e-13);
        expect(grads).not.toEqual(reference); // fused: another summation order
      }
      expect(reference.b.some((g) => g !== 0)).toBe(true);
      expect(await lossSumOrt(ort, params, run.slice(0, 3), 0.07)).toBe(
        run.slice(0, 3).reduce((sum, query) => sum + queryLoss(params, query, 0.07), 0),
      );
    });
  },
);
