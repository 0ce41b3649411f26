import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpDir } from '@bfe/core/testing';
import { fileTokenStore } from '@bfe/index';
import { afterAll, describe, expect, it } from 'vitest';
import { groupByCandidates, type RankQuery } from './ranking/groups.js';
import { rankSystems } from './ranking/rank-systems.js';
import type { RankingSide } from './ranking/sides.js';
import { SparseScorer } from './scorer.js';
import { rng, unitVectors } from '@bfe/index/testing';

const DIM = 16;
const scorers = await Promise.all([
  SparseScorer.open({ threads: 1 }),
  SparseScorer.open({ kernel: 'js' }),
]);
afterAll(() => Promise.all(scorers.map((s) => s.dispose())));

function side(prefix: string, counts: readonly number[], seed: number): RankingSide {
  const random = rng(seed);
  const tokenOffsets = new Int32Array(counts.length + 1);
  counts.forEach((n, i) => (tokenOffsets[i + 1] = tokenOffsets[i]! + n));
  return {
    dim: DIM,
    ids: counts.map((_, i) => `${prefix}${i}`),
    tokenVectors: unitVectors(tokenOffsets[counts.length]!, DIM, random),
    tokenOffsets,
    pooled: unitVectors(counts.length, DIM, random),
  };
}

describe('memory tokens read from a file', () => {
  it('rank every system and the k sweep exactly as the tokens in memory do', async () => {
    const memories = side('m', [4, 9, 4, 1, 4, 6, 2, 3, 6, 7, 5, 8, 12, 3], 1);
    const tokens = memories.tokenVectors!;
    // A duplicate token in another memory: an exact tie the file store must order the same way.
    tokens.set(tokens.subarray(0, DIM), 30 * DIM);
    const queries = side('q', [3, 5, 2, 0, 4, 3], 2);
    // Two segments with a gap, as an Arrow file's record batches lie.
    const path = join(tmpDir('bfe-scorer-file-'), 'tokens.bin');
    const split = 25 * DIM;
    const head = Buffer.from(tokens.slice(0, split).buffer);
    const tail = Buffer.from(tokens.slice(split).buffer);
    writeFileSync(path, Buffer.concat([Buffer.alloc(7), head, Buffer.alloc(5), tail]));
    const store = fileTokenStore({
      path,
      dim: DIM,
      dtype: 'float32',
      segments: [
        { offset: 7, rows: 25 },
        { offset: 12 + head.length, rows: tokens.length / DIM - 25 },
      ],
    });
    const fromFile: RankingSide = { ...memories, tokens: store };
    delete (fromFile as { tokenVectors?: Float32Array }).tokenVectors;
    expect('tokenVectors' in fromFile).toBe(false);
    const bankIds = memories.ids!.map((_, i) => (i < 6 ? 'a' : i < 10 ? 'b' : 'c'));
    const rankQueries: RankQuery[] = [
      { id: 'q0', text: 'a', candidateBankIds: ['a'] },
      { id: 'q1', text: 'b', candidateBankIds: ['b', 'c'] },
      { id: 'q2', text: 'c', candidateBankIds: ['a', 'c'] },
      { id: 'q3', text: 'd', candidateBankIds: ['a'] },
      { id: 'q4', text: 'e', candidateIds: ['m9', 'm2', 'm11', 'm0'] },
      { id: 'q5', text: 'f', candidateBankIds: ['a', 'b', 'c'] },
    ];
    const groups = groupByCandidates({ ids: memories.ids!, bankIds }, rankQueries);
    const input = {
      queries,
      memoryTexts: memories.ids!.map((id) => id),
      groups,
      k: 8,
      alpha: 0.5,
      kSweep: [4, 8, 16],
      top: 50,
    };
    for (const scorer of scorers) {
      const a = await rankSystems(scorer, { ...input, memories });
      const b = await rankSystems(scorer, { ...input, memories: fromFile });
      expect(b.systems).toEqual(a.systems);
      expect(b.sweep).toEqual(a.sweep);
      expect(b.ties).toEqual(a.ties);
    }
    store.close();
  });
});
