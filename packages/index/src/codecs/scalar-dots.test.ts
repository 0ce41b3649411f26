import { describe, expect, it } from 'vitest';
import { arrayCodeSource } from '../code-source.js';
import { codecTokenStore } from '../codec-index.js';
import { dotsInto } from '../dots.js';
import { rng, unitVectors } from '../testing/random.js';
import { decodeTokens, encodeTokens, prepareQuery, scalarCodeDots, trainCodec } from './codec.js';
import type { CodecName } from './model.js';

const DIM = 160; // rp128+sq4 projects onto 128 of them

describe('scalarCodeDots (decode as it sums)', () => {
  it.each(['sq8', 'sq4', 'rp128+sq4'] as CodecName[])(
    '%s: bit for bit decodeTokens then dotsInto, every count (the 4-row blocks and the tail), in memory and by position',
    (name) => {
      const n = 300;
      const x = unitVectors(n, DIM, rng(7));
      const model = trainCodec(name, x, n, DIM, { seed: 42 });
      const codes = encodeTokens(model, x, n);
      const q = prepareQuery(model, unitVectors(3, DIM, rng(8)), 3);
      const cd = model.codeDim;
      const kernel = scalarCodeDots(model)!;
      const inMemory = codecTokenStore(model, codes);
      const bySource = codecTokenStore(model, arrayCodeSource(codes, model.bytesPerToken));
      for (let count = 0; count <= 19; count++) {
        // Scattered rows, a repeat included.
        const rows = Int32Array.from({ length: count }, (_, h) => (h * 97 + 11) % n);
        if (count > 2) rows[2] = rows[0]!;
        const decoded = new Float32Array(count * cd);
        for (let h = 0; h < count; h++) {
          decodeTokens(
            model,
            codes,
            rows[h]!,
            rows[h]! + 1,
            decoded.subarray(h * cd, (h + 1) * cd),
          );
        }
        const offsets = Int32Array.from({ length: count }, (_, h) => h * cd);
        for (const r of [0, 2]) {
          const want = new Float64Array(count);
          dotsInto(decoded, offsets, count, q, r * cd, want, cd);
          const got = new Float64Array(count);
          kernel(codes, rows, count, q, r * cd, got);
          expect(Array.from(got)).toEqual(Array.from(want));
          const a = new Float64Array(count);
          inMemory.dots(rows, count, q, r * cd, a);
          expect(Array.from(a)).toEqual(Array.from(want));
          const b = new Float64Array(count);
          bySource.dots(rows, count, q, r * cd, b);
          expect(Array.from(b)).toEqual(Array.from(want));
        }
      }
    },
  );

  it('has no fused kernel for fp32 and fp16', () => {
    const x = unitVectors(10, DIM, rng(9));
    expect(scalarCodeDots(trainCodec('fp32', x, 10, DIM))).toBeUndefined();
    expect(scalarCodeDots(trainCodec('fp16', x, 10, DIM))).toBeUndefined();
  });
});
