import { afterAll, describe, expect, it } from 'vitest';
import { SparseScorer } from '../scorer.js';
import { rng, unitVectors } from '@bfe/index/testing';
import { groupByCandidates, type RankQuery } from './groups.js';
import { rankSystems, type SystemRankings } from './rank-systems.js';
import type { RankingSide } from './sides.js';

const scorer = await SparseScorer.open({ kernel: 'js' });
afterAll(() => scorer.dispose());

const DIM = 8;
const WORDS = ['cat', 'dog', 'bird', 'fish', 'tree', 'car', 'rain', 'sun', 'moon', 'sea'];

/** A benchmark in file order: memories of three banks, some exact duplicates, and queries. */
function benchmark(seed: number) {
  const random = rng(seed);
  const counts = Array.from({ length: 30 }, (_, i) => 2 + ((i * 7) % 5));
  const tokenOffsets = new Int32Array(counts.length + 1);
  counts.forEach((n, i) => (tokenOffsets[i + 1] = tokenOffsets[i]! + n));
  const tokenVectors = unitVectors(tokenOffsets[counts.length]!, DIM, random);
  const pooled = unitVectors(counts.length, DIM, random);
  const texts = counts.map((_, i) => `${WORDS[i % 10]} ${WORDS[(i * 3) % 10]}`);
  // Memories 4, 5 and 6 copy memory 3 (tokens, pooled vector, text): every system ties them.
  for (const copy of [4, 5, 6]) {
    tokenVectors.set(
      tokenVectors.subarray(tokenOffsets[3]! * DIM, tokenOffsets[4]! * DIM),
      tokenOffsets[copy]! * DIM,
    );
    pooled.set(pooled.subarray(3 * DIM, 4 * DIM), copy * DIM);
    texts[copy] = texts[3]!;
  }
  const memories: RankingSide = {
    dim: DIM,
    ids: counts.map((_, i) => `conv-${Math.floor(i / 10)}:D1:${i % 10}`),
    tokenVectors,
    tokenOffsets,
    pooled,
  };
  const bankIds = counts.map((_, i) => `conv-${Math.floor(i / 10)}`);
  const qCounts = [3, 1, 4, 0, 2, 5, 3, 2];
  const qOffsets = new Int32Array(qCounts.length + 1);
  qCounts.forEach((n, i) => (qOffsets[i + 1] = qOffsets[i]! + n));
  const queries: RankingSide = {
    dim: DIM,
    ids: qCounts.map((_, i) => `q${i}`),
    tokenVectors: unitVectors(qOffsets[qCounts.length]!, DIM, random),
    tokenOffsets: qOffsets,
    pooled: unitVectors(qCounts.length, DIM, random),
  };
  // The queries' texts share no word with most memories: BM25 ties them at 0.
  const rankQueries: RankQuery[] = queries.ids.map((id, i) => ({
    id,
    text: i % 2 === 0 ? 'cat moon' : 'zebra',
    ...(i === 5
      ? { candidateIds: memories.ids.filter((_, m) => m % 3 === 0) }
      : { candidateBankIds: [`conv-${i % 3}`, ...(i === 2 ? ['conv-1'] : [])] }),
  }));
  const adaptedTokens = unitVectors(qOffsets[qCounts.length]!, DIM, random);
  return { memories, bankIds, texts, queries, rankQueries, adaptedTokens };
}

/** Rows of `side` in the order `perm` (new row r holds old row perm[r]). */
function permuteSide(side: RankingSide, perm: readonly number[]): RankingSide {
  const o = side.tokenOffsets;
  const offsets = new Int32Array(perm.length + 1);
  perm.forEach((old, r) => (offsets[r + 1] = offsets[r]! + o[old + 1]! - o[old]!));
  const tokens = new Float32Array(side.tokenVectors!.length);
  const pooled = new Float32Array(side.pooled.length);
  perm.forEach((old, r) => {
    tokens.set(side.tokenVectors!.subarray(o[old]! * DIM, o[old + 1]! * DIM), offsets[r]! * DIM);
    pooled.set(side.pooled.subarray(old * DIM, (old + 1) * DIM), r * DIM);
  });
  return {
    dim: DIM,
    ids: perm.map((old) => side.ids[old]!),
    tokenVectors: tokens,
    tokenOffsets: offsets,
    pooled,
  };
}

/** A seeded shuffle of 0..n-1. */
function shuffle(n: number, seed: number): number[] {
  const random = rng(seed);
  const out = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Each system's rankings as query id → ranked ids, whatever order the queries came in. */
function canonical(ranked: SystemRankings): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  for (const [name, runs] of ranked.systems) {
    out[name] = Object.fromEntries([...runs].sort(([a], [b]) => (a < b ? -1 : 1)));
  }
  return out;
}

async function rankAll(b: ReturnType<typeof benchmark>, memoryPerm: number[], queryPerm: number[]) {
  const memories = permuteSide(b.memories, memoryPerm);
  const queries = permuteSide(b.queries, queryPerm);
  const q = b.queries.tokenOffsets;
  const adapted = new Float32Array(b.adaptedTokens.length);
  queryPerm.forEach((old, r) =>
    adapted.set(
      b.adaptedTokens.subarray(q[old]! * DIM, q[old + 1]! * DIM),
      queries.tokenOffsets[r]! * DIM,
    ),
  );
  const groups = groupByCandidates(
    { ids: memories.ids, bankIds: memoryPerm.map((old) => b.bankIds[old]!) },
    queryPerm.map((old) => b.rankQueries[old]!),
  );
  return rankSystems(scorer, {
    memories,
    memoryTexts: memoryPerm.map((old) => b.texts[old]!),
    queries,
    groups,
    k: 6,
    alpha: 0.5,
    kSweep: [3, 6, 12],
    top: 50,
    adapted: { queryTokens: adapted, alpha: 0.3 },
  });
}

describe('file order', () => {
  it('shuffling memories and queries changes no ranking, tie count or sweep of any system', async () => {
    const b = benchmark(3);
    const identity = (n: number) => Array.from({ length: n }, (_, i) => i);
    const first = await rankAll(b, identity(30), identity(8));
    // Ties are there to be broken: duplicates everywhere, BM25 zeros.
    for (const name of ['pooled', 'maxsim', 'bm25', 'sparse-fusion', 'adapted'] as const) {
      expect(first.ties.get(name)!.tiedPositions, name).toBeGreaterThan(0);
    }
    for (const seed of [1, 2, 3]) {
      const memoryPerm = shuffle(30, seed);
      const queryPerm = shuffle(8, seed + 100);
      expect(memoryPerm).not.toEqual(identity(30));
      const again = await rankAll(b, memoryPerm, queryPerm);
      expect(canonical(again), `shuffle ${seed}`).toEqual(canonical(first));
      expect(again.ties, `shuffle ${seed}`).toEqual(first.ties);
      for (const [k, point] of first.sweep) {
        for (const [name, runs] of point.systems) {
          const other = again.sweep.get(k)!.systems.get(name)!;
          expect(new Map([...other].sort()), `${name} at k = ${k}`).toEqual(
            new Map([...runs].sort()),
          );
        }
      }
    }
  });
});
