import { describe, expect, it } from 'vitest';
import { codecTokenStore } from './codec-index.js';
import { trainCodec } from './codecs/codec.js';
import { encodeTokens } from './codecs/codec.js';
import { rng, unitVectors } from './testing/random.js';
import { flatTokenStore } from './token-store.js';

const DIM = 48;
const N = 100;

/** Float64 dots of some query rows against a scattered token list, through `store`. */
function dotsOf(store: ReturnType<typeof flatTokenStore>, q: Float32Array, tokens: Int32Array) {
  const out: number[] = [];
  for (let r = 0; r < 3; r++) {
    const row = new Float64Array(tokens.length);
    store.dots(tokens, tokens.length, q, r * DIM, row);
    out.push(...row);
  }
  return out;
}

describe('codecTokenStore', () => {
  const x = unitVectors(N, DIM, rng(7));
  const q = unitVectors(3, DIM, rng(8));
  // Repeats, descending and ascending runs, more than one block of eight rows.
  const tokens = Int32Array.from([5, 99, 0, 5, 42, 41, 40, 17, 3, 88, 61, 62, 63, 1, 2]);
  const fp32 = trainCodec('fp32', x, N, DIM);
  const want = dotsOf(flatTokenStore(x, DIM), q, tokens);

  it('fp32 codes on a 4-byte boundary score bit-identically to the flat vectors', () => {
    const codes = encodeTokens(fp32, x, N);
    expect(codes.byteOffset % 4).toBe(0);
    expect(dotsOf(codecTokenStore(fp32, codes), q, tokens)).toEqual(want);
  });

  it('fp32 codes off a 4-byte boundary (decoded through a copy) score the same', () => {
    const backing = new Uint8Array(N * DIM * 4 + 1);
    backing.set(encodeTokens(fp32, x, N), 1);
    const codes = backing.subarray(1);
    expect(codes.byteOffset % 4).toBe(1);
    expect(dotsOf(codecTokenStore(fp32, codes), q, tokens)).toEqual(want);
  });

  it('fp16 codes score their decoded halves', () => {
    const fp16 = trainCodec('fp16', x, N, DIM);
    const store = codecTokenStore(fp16, encodeTokens(fp16, x, N));
    const decoded = flatTokenStore(store.read(0, N).slice(), DIM);
    expect(dotsOf(store, q, tokens)).toEqual(dotsOf(decoded, q, tokens));
  });
});
