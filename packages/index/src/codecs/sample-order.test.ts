import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { describe, expect, it } from 'vitest';
import { trainCodec } from './codec.js';
import { codecModelSchema } from './model.js';
import { CODEC_SAMPLE_SEED, hashSampleRows } from './sample-order.js';
import { QUANTILE_ROWS } from './scalar.js';

const DIM = 4;

/** A bank of memories (ids `m<i>`, 4–16 tokens each) whose values drift with the memory. */
function makeBank(memories: number, seed: number) {
  const rng = xoroshiro128plus(seed);
  const ids = Array.from({ length: memories }, (_, m) => `m${m}`);
  const lengths = ids.map(() => uniformInt(rng, 4, 16));
  const tokenOffsets = new Int32Array(memories + 1);
  lengths.forEach((l, m) => (tokenOffsets[m + 1] = tokenOffsets[m]! + l));
  const n = tokenOffsets[memories]!;
  const x = new Float32Array(n * DIM);
  for (let m = 0; m < memories; m++) {
    // A drift along the bank: a prefix or a stride of the file is not a sample of the whole.
    const shift = (3 * m) / memories;
    for (let t = tokenOffsets[m]!; t < tokenOffsets[m + 1]!; t++) {
      for (let d = 0; d < DIM; d++) x[t * DIM + d] = uniformFloat64(rng) - 0.5 + shift * (d + 1);
    }
  }
  return { ids, tokenOffsets, x, n };
}

/** The bank with its memories stored in the order `order` (each memory's tokens kept together). */
function reorder(bank: ReturnType<typeof makeBank>, order: readonly number[]) {
  const { tokenOffsets, x } = bank;
  const ids = order.map((m) => bank.ids[m]!);
  const offsets = new Int32Array(order.length + 1);
  const y = new Float32Array(x.length);
  order.forEach((m, i) => {
    const start = tokenOffsets[m]!;
    const len = tokenOffsets[m + 1]! - start;
    y.set(x.subarray(start * DIM, (start + len) * DIM), offsets[i]! * DIM);
    offsets[i + 1] = offsets[i]! + len;
  });
  return { ids, tokenOffsets: offsets, x: y, n: bank.n };
}

function shuffled(count: number, seed: number): number[] {
  const out = Array.from({ length: count }, (_, i) => i);
  const rng = xoroshiro128plus(seed);
  for (let i = count - 1; i > 0; i--) {
    const j = uniformInt(rng, 0, i);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

// ~80,000 tokens: more than QUANTILE_ROWS, so the quantile fit reads a sample.
const bank = makeBank(8000, 1);
const permuted = reorder(bank, shuffled(8000, 2));

describe('the codec sample order (seeded hash of memory id and position)', () => {
  it('the bank is larger than the quantile sample', () => {
    expect(bank.n).toBeGreaterThan(QUANTILE_ROWS);
  });

  it.each(['sq8', 'sq4'] as const)(
    '%s quantile fit: the same for a bank whose memories are stored in another order',
    (name) => {
      const fit = (b: typeof bank) =>
        trainCodec(name, b.x, b.n, DIM, {
          range: 'quantile',
          tokens: { ids: b.ids, tokenOffsets: b.tokenOffsets },
        });
      const a = fit(bank);
      expect(fit(permuted)).toEqual(a);
      expect(a.params['sampleSeed']).toBe(CODEC_SAMPLE_SEED);
      expect(codecModelSchema.parse(JSON.parse(JSON.stringify(a)))).toEqual(a);
      // Keyed on rows instead of identity, the same permutation changes the fit.
      const byRow = (b: typeof bank) => trainCodec(name, b.x, b.n, DIM, { range: 'quantile' });
      expect(byRow(permuted)).not.toEqual(byRow(bank));
      // Another seed draws another sample, so another fit.
      const other = trainCodec(name, bank.x, bank.n, DIM, {
        range: 'quantile',
        tokens: { ids: bank.ids, tokenOffsets: bank.tokenOffsets },
        sampleSeed: 7,
      });
      expect(other.params['sampleSeed']).toBe(7);
      expect(other.params['lo']).not.toEqual(a.params['lo']);
    },
  );

  it('a min/max fit reads every token and saves no sample seed', () => {
    const a = trainCodec('sq8', bank.x, bank.n, DIM);
    expect(a.params).not.toHaveProperty('sampleSeed');
    expect(trainCodec('sq8', permuted.x, permuted.n, DIM)).toEqual(a);
  });

  it('selects the same tokens (memory id, position) whatever the memories’ order', () => {
    const identityOf = (b: typeof bank, rows: Int32Array): string[] => {
      const out: string[] = [];
      let m = 0;
      for (const row of rows) {
        while (b.tokenOffsets[m + 1]! <= row) m++;
        out.push(`${b.ids[m]}#${row - b.tokenOffsets[m]!}`);
      }
      return out.sort();
    };
    const pick = (b: typeof bank) =>
      hashSampleRows(b.n, 5000, 42, { ids: b.ids, tokenOffsets: b.tokenOffsets });
    const a = pick(bank);
    expect(a.length).toBe(5000);
    for (let i = 1; i < a.length; i++) expect(a[i]!).toBeGreaterThan(a[i - 1]!);
    expect(identityOf(permuted, pick(permuted))).toEqual(identityOf(bank, a));
    // Spread over the bank, not a prefix: about half the sample lies in each half of the rows.
    const firstHalf = a.filter((r) => r < bank.n / 2).length;
    expect(firstHalf).toBeGreaterThan(2250);
    expect(firstHalf).toBeLessThan(2750);
  });

  it('every row when the sample is the whole bank; a mismatched identity is refused', () => {
    expect(Array.from(hashSampleRows(5, 10, 42))).toEqual([0, 1, 2, 3, 4]);
    expect(() =>
      hashSampleRows(bank.n, 10, 42, { ids: bank.ids.slice(1), tokenOffsets: bank.tokenOffsets }),
    ).toThrow(/Token identity/);
  });
});
