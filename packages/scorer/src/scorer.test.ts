import fc from 'fast-check';
import { ConfigError } from '@bfe/core';
import { afterAll, describe, expect, it } from 'vitest';
import { ScorerInputError } from '@bfe/index';
import { rankCandidates } from './fusion.js';
import { tieOrder } from '@bfe/index';
import { SparseScorer, type QueryScores, type ScoreRequest } from './scorer.js';
import { randomBank, rng, unitVectors } from '@bfe/index/testing';
import { referenceScores, type ReferenceBank } from './testing/reference.js';
import type { TokenBank } from './validate.js';

const ort = await SparseScorer.open({ threads: 1 });
const js = await SparseScorer.open({ kernel: 'js' });
afterAll(async () => {
  await ort.dispose();
  await js.dispose();
});

const DIM = 32;

function fixture(seed: number) {
  const random = rng(seed);
  const memories = randomBank(60, 12, DIM, random);
  const queries = randomBank(8, 8, DIM, random, 1);
  // one query without content tokens
  const offsets = Int32Array.from(queries.tokenOffsets);
  const shift = offsets[4]! - offsets[3]!;
  for (let i = 4; i < offsets.length; i++) offsets[i]! -= shift;
  const vectors = new Float32Array(offsets[8]! * DIM);
  vectors.set(queries.tokenVectors.subarray(0, offsets[3]! * DIM));
  vectors.set(queries.tokenVectors.subarray((offsets[3]! + shift) * DIM), offsets[3]! * DIM);
  const candidates = Array.from({ length: 60 }, (_, i) => i)
    .sort(() => random() - 0.5)
    .slice(0, 40);
  return {
    memories,
    queries: { ...queries, tokenOffsets: offsets, tokenVectors: vectors },
    candidates,
  };
}

function expectClose(actual: ArrayLike<number>, expected: readonly number[], tolerance: number) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    expect(Math.abs(actual[i]! - expected[i]!), `entry ${i}`).toBeLessThanOrEqual(tolerance);
  }
}

function checkAgainstReference(
  result: QueryScores,
  memories: ReferenceBank,
  queries: ReferenceBank,
  k: number,
  alpha: number,
) {
  const ref = referenceScores(
    memories,
    queries,
    result.queryRow,
    Array.from(result.candidates),
    k,
    alpha,
  );
  expectClose(result.systems.pooled, ref.pooled, 1e-12);
  if (result.pooledOnly) {
    expect(ref.tailFloor).toEqual([]);
    expectClose(result.systems['sparse-fusion'], ref.pooled, 1e-12);
    if (result.systems['maxsim-fusion'] !== undefined) {
      expectClose(result.systems['maxsim-fusion'], ref.pooled, 1e-12);
    }
    return;
  }
  expectClose(result.tailFloor, ref.tailFloor, 1e-12);
  expectClose(result.sparse, ref.sparse, 1e-12);
  expectClose(result.sparseZeroFloor, ref.sparseZeroFloor, 1e-12);
  // MaxSim keeps the kernel's float32 products
  expectClose(result.systems.maxsim!, ref.maxsim, 1e-6);
  expectClose(result.systems['sparse-fusion'], ref.fused, 1e-9);
  expectClose(result.systems['zero-floor'], ref.zeroFloorFused, 1e-9);
  expectClose(result.systems['no-fusion'], ref.noFusion, 1e-9);
  // z(MaxSim) of float32 products, fused with z(pooled) at α (computed along with MaxSim)
  const maxsimFusion = result.systems['maxsim-fusion'];
  if (maxsimFusion !== undefined) expectClose(maxsimFusion, ref.maxsimFused, 1e-5);
}

describe('SparseScorer against the float64 reference', () => {
  it.each([
    ['onnxruntime', 16, 65_536],
    ['onnxruntime', 16, 50],
    ['onnxruntime', 64, 7],
    ['js', 16, 50],
  ] as const)('%s kernel, k = %i, chunk = %i', async (kernel, k, chunkSize) => {
    const { memories, queries, candidates } = fixture(k + chunkSize);
    const scorer = kernel === 'js' ? js : ort;
    const results = await scorer.score(
      { memories, queries, queryRows: [0, 1, 2, 3, 4, 5, 6, 7], candidates },
      { k, alpha: 0.3, chunkSize },
    );
    expect(results.map((r) => r.queryRow)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(results.map((r) => r.pooledOnly)).toEqual([
      false,
      false,
      false,
      true,
      false,
      false,
      false,
      false,
    ]);
    for (const r of results) {
      expect(r.candidates).toEqual(Int32Array.from(candidates));
      expect(r.k).toBe(k);
      expect(r.systems['maxsim-fusion']).toBeInstanceOf(Float64Array);
      checkAgainstReference(r, memories, queries, k, 0.3);
    }
  });

  it('scores a query alone exactly as within a batch', async () => {
    const { memories, queries, candidates } = fixture(5);
    const batch = await ort.score({ memories, queries, queryRows: [0, 1, 2, 5], candidates });
    const alone = await ort.score({ memories, queries, queryRows: [5], candidates });
    expect(alone[0]!.systems['sparse-fusion']).toEqual(batch[3]!.systems['sparse-fusion']);
    expect(alone[0]!.sparse).toEqual(batch[3]!.sparse);
  });

  it('omits MaxSim when not asked for', async () => {
    const { memories, queries, candidates } = fixture(6);
    const [r] = await ort.score(
      { memories, queries, queryRows: [0], candidates },
      { maxsim: false },
    );
    expect(r!.systems.maxsim).toBeUndefined();
    expect(r!.systems['maxsim-fusion']).toBeUndefined();
    checkAgainstReference(
      { ...r!, systems: { ...r!.systems, maxsim: referenceMaxsim(r!, memories, queries) } },
      memories,
      queries,
      64,
      0.5,
    );
  });
});

function referenceMaxsim(r: QueryScores, memories: ReferenceBank, queries: ReferenceBank) {
  return Float64Array.from(
    referenceScores(memories, queries, r.queryRow, Array.from(r.candidates), 64, 0.5).maxsim,
  );
}

/** The same bank with its memory rows in another order (`perm[new] = old`). */
function permuteBank(bank: TokenBank, perm: readonly number[]): TokenBank {
  const { dim, tokenOffsets, pooled } = bank;
  const tokenVectors = bank.tokenVectors!;
  const offsets = new Int32Array(perm.length + 1);
  const vectors = new Float32Array(tokenVectors.length);
  const pooledOut = new Float32Array(pooled.length);
  perm.forEach((old, row) => {
    const a = tokenOffsets[old]!;
    const b = tokenOffsets[old + 1]!;
    offsets[row + 1] = offsets[row]! + (b - a);
    vectors.set(tokenVectors.subarray(a * dim, b * dim), offsets[row]! * dim);
    pooledOut.set(pooled.subarray(old * dim, (old + 1) * dim), row * dim);
  });
  return { dim, tokenVectors: vectors, tokenOffsets: offsets, pooled: pooledOut };
}

describe('invariance to the order of the bank', () => {
  it('every memory keeps its scores when bank rows and candidates are reordered', async () => {
    const { memories, queries, candidates } = fixture(77);
    const queryRows = [0, 1, 2, 4, 5];
    const base = await ort.score(
      { memories, queries, queryRows, candidates },
      { k: 24, chunkSize: 64 },
    );
    const scoreOf = (
      results: QueryScores[],
      q: number,
      memory: number,
      map: (m: number) => number,
    ) => {
      const r = results[q]!;
      const at = Array.from(r.candidates).indexOf(map(memory));
      return {
        pooled: r.systems.pooled[at]!,
        maxsim: r.systems.maxsim![at]!,
        fused: r.systems['sparse-fusion'][at]!,
        zero: r.systems['zero-floor'][at]!,
        none: r.systems['no-fusion'][at]!,
        sparse: r.sparse[at]!,
      };
    };
    await fc.assert(
      fc.asyncProperty(
        fc.shuffledSubarray(
          Array.from({ length: 60 }, (_, i) => i),
          { minLength: 60, maxLength: 60 },
        ),
        fc.shuffledSubarray(candidates, { minLength: 40, maxLength: 40 }),
        fc.constantFrom(7, 64, 1000),
        async (perm, candidateOrder, chunkSize) => {
          const newRow = new Map(perm.map((old, row) => [old, row]));
          const permuted = permuteBank(memories, perm);
          const results = await ort.score(
            {
              memories: permuted,
              queries,
              queryRows,
              candidates: candidateOrder.map((m) => newRow.get(m)!),
            },
            { k: 24, chunkSize },
          );
          for (let q = 0; q < queryRows.length; q++) {
            for (const m of candidates) {
              const a = scoreOf(base, q, m, (x) => x);
              const b = scoreOf(results, q, m, (x) => newRow.get(x)!);
              expect(Math.abs(a.pooled - b.pooled)).toBeLessThan(1e-12);
              expect(Math.abs(a.sparse - b.sparse)).toBeLessThan(1e-12);
              expect(Math.abs(a.fused - b.fused)).toBeLessThan(1e-9);
              expect(Math.abs(a.zero - b.zero)).toBeLessThan(1e-9);
              expect(Math.abs(a.none - b.none)).toBeLessThan(1e-9);
              expect(Math.abs(a.maxsim - b.maxsim)).toBeLessThan(1e-6);
            }
          }
        },
      ),
      { numRuns: 20, seed: 42 },
    );
  });
});

describe('ties', () => {
  it('duplicate memories score the same and rank by their tie keys, not candidate order', async () => {
    const random = rng(31);
    const memories = randomBank(20, 6, DIM, random, 1);
    // memory 11 becomes an exact copy of memory 3 (tokens and pooled)
    const copy = (from: number, to: number) => {
      const o = memories.tokenOffsets;
      const n = o[from + 1]! - o[from]!;
      const shift = n - (o[to + 1]! - o[to]!);
      const vectors = new Float32Array(memories.tokenVectors.length + shift * DIM);
      vectors.set(memories.tokenVectors.subarray(0, o[to]! * DIM));
      vectors.set(memories.tokenVectors.subarray(o[from]! * DIM, o[from + 1]! * DIM), o[to]! * DIM);
      vectors.set(memories.tokenVectors.subarray(o[to + 1]! * DIM), (o[to]! + n) * DIM);
      const offsets = Int32Array.from(o, (v, i) => (i > to ? v + shift : v));
      const pooled = memories.pooled.slice();
      pooled.set(memories.pooled.subarray(from * DIM, (from + 1) * DIM), to * DIM);
      return { dim: DIM, tokenVectors: vectors, tokenOffsets: offsets, pooled };
    };
    const bank = copy(3, 11);
    // the query is memory 3's own tokens: both copies hold its best hits
    const o = bank.tokenOffsets;
    const queries = {
      dim: DIM,
      tokenVectors: bank.tokenVectors.slice(o[3]! * DIM, o[4]! * DIM),
      tokenOffsets: Int32Array.of(0, o[4]! - o[3]!),
      pooled: unitVectors(1, DIM, random),
    };
    const candidates = [11, 0, 5, 3, 8];
    const [r] = await ort.score({ memories: bank, queries, queryRows: [0], candidates }, { k: 8 });
    const [reversed] = await ort.score(
      { memories: bank, queries, queryRows: [0], candidates: [...candidates].reverse() },
      { k: 8 },
    );
    // 'm3' sorts before 'm11' by SHA-256('42:m3') vs SHA-256('42:m11'); with other ids, after.
    const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
    const swapped = ids.map((id, i) => (i === 3 ? 'm11' : i === 11 ? 'm3' : id));
    expect(tieOrder(ids).rank[3]).toBeLessThan(tieOrder(ids).rank[11]!);
    for (const system of [
      'pooled',
      'maxsim',
      'sparse-fusion',
      'zero-floor',
      'no-fusion',
      'maxsim-fusion',
    ] as const) {
      const scores = r!.systems[system]!;
      expect(scores[0], system).toBe(scores[3]);
      const ranked = rankCandidates(r!.candidates, scores, tieOrder(ids));
      const at3 = Array.from(ranked.rows).indexOf(3);
      expect(ranked.rows[at3 + 1], system).toBe(11);
      const back = rankCandidates(reversed!.candidates, reversed!.systems[system]!, tieOrder(ids));
      expect(back.rows, system).toEqual(ranked.rows);
      const other = rankCandidates(r!.candidates, scores, tieOrder(swapped));
      expect(other.rows[other.rows.indexOf(11) + 1], system).toBe(3);
    }
    checkAgainstReference(r!, bank, queries, 8, 0.5);
  });
});

describe('bad input', () => {
  const { memories, queries, candidates } = fixture(9);
  const request: ScoreRequest = { memories, queries, queryRows: [0, 1], candidates };
  async function reason(req: ScoreRequest, options = {}) {
    const error = await ort.score(req, options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ScorerInputError);
    return { reason: (error as ScorerInputError).reason, message: (error as Error).message };
  }

  it('a dimension mismatch between queries and memories', async () => {
    const q16 = randomBank(2, 3, 16, rng(1), 1);
    expect(await reason({ ...request, queries: q16 })).toEqual({
      reason: 'dimension-mismatch',
      message: 'queries have dimension 16 but memories have 32',
    });
    // a 16-d bank declared as 32-d
    expect(await reason({ ...request, queries: { ...q16, dim: 32 } })).toMatchObject({
      reason: 'dimension-mismatch',
      message: expect.stringMatching(
        /^queries: token vectors have 16 floats each, but the bank's dim is 32/,
      ),
    });
  });

  it('a bank from another model', async () => {
    expect(
      await reason({
        ...request,
        memories: { ...memories, model: 'a' },
        queries: { ...queries, model: 'b' },
      }),
    ).toEqual({
      reason: 'model-mismatch',
      message: 'queries come from model b but memories from a',
    });
  });

  it('NaN or Inf in memory tokens, query tokens and pooled vectors, named', async () => {
    const bad = { ...memories, tokenVectors: memories.tokenVectors.slice() };
    const row = candidates.find(
      (m) => memories.tokenOffsets[m + 1]! - memories.tokenOffsets[m]! >= 2,
    )!;
    const token = memories.tokenOffsets[row]! + 1;
    bad.tokenVectors[token * DIM + 4] = NaN;
    expect(await reason({ ...request, memories: bad })).toEqual({
      reason: 'non-finite',
      message: `token 1 of memory row ${row} (bank token ${token}) has a non-finite component (NaN at dimension 4)`,
    });
    const badQuery = { ...queries, tokenVectors: queries.tokenVectors.slice() };
    badQuery.tokenVectors[queries.tokenOffsets[1]! * DIM + 2] = -Infinity;
    expect(await reason({ ...request, queries: badQuery })).toEqual({
      reason: 'non-finite',
      message: 'token 0 of query row 1 has a non-finite component (-Infinity at dimension 2)',
    });
    const ids = Array.from({ length: 60 }, (_, i) => `m${i}`);
    const badPooled = { ...memories, pooled: memories.pooled.slice(), ids };
    badPooled.pooled[candidates[0]! * DIM] = Infinity;
    expect(await reason({ ...request, memories: badPooled })).toEqual({
      reason: 'non-finite',
      message: `the pooled vector of memory row ${candidates[0]} (m${candidates[0]}) has a non-finite component (Infinity at dimension 0)`,
    });
  });

  it('candidates without content tokens (an empty bank)', async () => {
    const empty = Array.from({ length: 60 }, (_, i) => i).filter(
      (i) => memories.tokenOffsets[i + 1] === memories.tokenOffsets[i],
    );
    expect(empty.length).toBeGreaterThan(0);
    expect(await reason({ ...request, candidates: empty })).toEqual({
      reason: 'empty-bank',
      message: `the ${empty.length} candidate memories of query row 0, query row 1 hold no content tokens`,
    });
  });

  it('k larger than the bank: an error, or clamped on request', async () => {
    const few = [candidates[0]!, candidates[1]!];
    const size = few.reduce(
      (s, m) => s + memories.tokenOffsets[m + 1]! - memories.tokenOffsets[m]!,
      0,
    );
    expect(await reason({ ...request, candidates: few }, { k: 64 })).toEqual({
      reason: 'k-exceeds-bank',
      message: `k = 64 is larger than the bank of ${size} tokens`,
    });
    const [r] = await ort.score({ ...request, candidates: few }, { k: 64, clampK: true });
    expect(r!.k).toBe(size);
    checkAgainstReference(r!, memories, queries, size, 0.5);
  });

  it('bad candidates and query rows', async () => {
    expect((await reason({ ...request, candidates: [] })).reason).toBe('bad-candidates');
    expect(await reason({ ...request, candidates: [1, 2, 1] })).toEqual({
      reason: 'bad-candidates',
      message: 'memory row 1 is listed twice among the candidates',
    });
    expect((await reason({ ...request, candidates: [0, 60] })).message).toBe(
      'candidate 1 is 60, not a memory row in 0..59',
    );
    expect((await reason({ ...request, queryRows: [8] })).reason).toBe('bad-query-rows');
  });

  it('decreasing offsets', async () => {
    const offsets = Int32Array.from(memories.tokenOffsets);
    offsets[10] = offsets[11]! + 1;
    expect(
      (await reason({ ...request, memories: { ...memories, tokenOffsets: offsets } })).reason,
    ).toBe('bad-shape');
  });

  it('bad options', async () => {
    await expect(ort.score(request, { k: 0 })).rejects.toBeInstanceOf(ConfigError);
    await expect(ort.score(request, { alpha: 2 })).rejects.toThrow(/alpha/);
  });
});
