import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { describe, expect, it } from 'vitest';
import { decodeTokens, encodeTokens, prepareQuery, trainCodec } from './codec.js';
import { codecModelSchema } from './model.js';
import type { CodecName } from './model.js';

const DIM = 384;

/** `n` random unit vectors with a per-dimension offset, like contextual token states. */
function unitVectors(n: number, dim: number, seed: number): Float32Array {
  const rng = xoroshiro128plus(seed);
  const x = new Float32Array(n * dim);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let d = 0; d < dim; d++) {
      const v = uniformFloat64(rng) - 0.5 + (d % 7 === 0 ? 0.3 : 0);
      x[i * dim + d] = v;
      s += v * v;
    }
    for (let d = 0; d < dim; d++) x[i * dim + d] = x[i * dim + d]! / Math.sqrt(s);
  }
  return x;
}

/** The first few places where `|out − ref|` exceeds `tol(i)`, as readable lines (none: []). */
function overTolerance(out: Float32Array, ref: Float32Array, tol: (i: number) => number): string[] {
  const bad: string[] = [];
  for (let i = 0; i < ref.length && bad.length < 5; i++) {
    const err = Math.abs(out[i]! - ref[i]!);
    if (!(err <= tol(i))) bad.push(`[${i}] ${out[i]} vs ${ref[i]}: ${err} > ${tol(i)}`);
  }
  return bad;
}

const names: CodecName[] = ['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4'];
const bank = unitVectors(500, DIM, 1);

describe('codecs', () => {
  it.each([
    ['fp32', 1536, 384],
    ['fp16', 768, 384],
    ['sq8', 384, 384],
    ['sq4', 192, 384],
    ['rp128+sq4', 64, 128],
  ] as const)('%s stores %i bytes per token, decodes to %i dims', (name, bytes, codeDim) => {
    const model = trainCodec(name, bank, 500, DIM);
    expect(model.bytesPerToken).toBe(bytes);
    expect(model.codeDim).toBe(codeDim);
    const codes = encodeTokens(model, bank, 500);
    expect(codes.length).toBe(500 * bytes);
    expect(decodeTokens(model, codes, 10, 30).length).toBe(20 * codeDim);
  });

  it('fp32 codes are a view of the vectors, not a copy', () => {
    const model = trainCodec('fp32', bank, 500, DIM);
    const codes = encodeTokens(model, bank.subarray(DIM), 400);
    expect(codes.buffer).toBe(bank.buffer);
    expect(codes.byteOffset).toBe(DIM * 4);
    expect(codes.byteLength).toBe(400 * DIM * 4);
  });

  it('fp32 round-trips exactly and fp16 within half an ulp', () => {
    for (const name of ['fp32', 'fp16'] as const) {
      const model = trainCodec(name, bank, 500, DIM);
      const out = decodeTokens(model, encodeTokens(model, bank, 500), 0, 500);
      expect(
        overTolerance(out, bank, (i) =>
          name === 'fp32' ? 0 : Math.max(Math.abs(bank[i]!) * 2 ** -11, 2 ** -25),
        ),
      ).toEqual([]);
    }
  });

  it.each(['sq8', 'sq4'] as const)(
    '%s is off by at most half a step per dim on its training range',
    (name) => {
      const model = trainCodec(name, bank, 500, DIM);
      const step = model.params.step as number[];
      const out = decodeTokens(model, encodeTokens(model, bank, 500), 0, 500);
      expect(overTolerance(out, bank, (i) => step[i % DIM]! / 2 + 1e-6)).toEqual([]);
    },
  );

  it('quantile ranges clamp the tails and are narrower than min/max', () => {
    // 0.1 % tails need more than 1,000 rows to differ from min/max.
    const big = unitVectors(3000, DIM, 2);
    const mm = trainCodec('sq4', big, 3000, DIM);
    const q = trainCodec('sq4', big, 3000, DIM, { range: 'quantile' });
    const a = mm.params.step as number[];
    const b = q.params.step as number[];
    expect(b.every((s, d) => s <= a[d]!)).toBe(true);
    expect(b.some((s, d) => s < a[d]!)).toBe(true);
  });

  it('rp128+sq4 preserves inner products in expectation and is deterministic by seed', () => {
    const model = trainCodec('rp128+sq4', bank, 500, DIM, { seed: 7 });
    const again = trainCodec('rp128+sq4', bank, 500, DIM, { seed: 7 });
    const other = trainCodec('rp128+sq4', bank, 500, DIM, { seed: 8 });
    expect(encodeTokens(again, bank, 500)).toEqual(encodeTokens(model, bank, 500));
    expect(encodeTokens(other, bank, 500)).not.toEqual(encodeTokens(model, bank, 500));
    const q = prepareQuery(model, bank, 500);
    // ⟨Px, Px⟩ averages ‖x‖² = 1 over tokens; the projection is orthonormal rows scaled by √3.
    let mean = 0;
    for (let i = 0; i < 500; i++) {
      let s = 0;
      for (let r = 0; r < 128; r++) s += q[i * 128 + r]! ** 2;
      mean += s / 500;
    }
    expect(mean).toBeGreaterThan(0.85);
    expect(mean).toBeLessThan(1.15);
  });

  it.each(names)('%s model JSON passes its zod schema and a broken one fails', (name) => {
    const model = trainCodec(name, bank, 500, DIM);
    const json = JSON.parse(JSON.stringify(model)) as unknown;
    expect(codecModelSchema.parse(json)).toEqual(model);
    expect(codecModelSchema.safeParse({ ...model, bytesPerToken: 1 }).success).toBe(false);
    if (name === 'sq4') {
      const params = { ...model.params, lo: [1, 2] };
      expect(codecModelSchema.safeParse({ ...model, params }).success).toBe(false);
    }
  });

  it('decoding a token range matches decoding everything', () => {
    const model = trainCodec('sq4', bank, 500, DIM);
    const codes = encodeTokens(model, bank, 500);
    const all = decodeTokens(model, codes, 0, 500);
    expect(decodeTokens(model, codes, 123, 321)).toEqual(all.subarray(123 * DIM, 321 * DIM));
  });
});
