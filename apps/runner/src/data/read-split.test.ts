import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Benchmark, Memory, Query } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { makeSplit } from '@bfe/split';
import { readSplitFile } from './read-split.js';

/** Six conversations, each its own bank with two queries: six connected components. */
function conversations(): Benchmark {
  const memories: Memory[] = [];
  const queries: Query[] = [];
  for (let c = 0; c < 6; c++) {
    const bankId = `conv-${c}`;
    memories.push({ id: `${bankId}:t0`, bankId, text: 'turn', meta: {} });
    for (let q = 0; q < 2; q++) {
      queries.push({
        id: `${bankId}:q${q}`,
        text: 'question',
        category: 'single-hop',
        meta: {},
        candidateBankIds: [bankId],
      });
    }
  }
  return { name: 'conv', options: {}, memories, queries, subtasks: ['single-hop'], sources: [] };
}

describe('readSplitFile', () => {
  const split = makeSplit(conversations(), { seed: 42, ratios: [2, 2, 2] });

  it('reads a split whose hash matches its content', async () => {
    const path = join(tmpDir('bfe-read-split-'), 'split.json');
    writeFileSync(path, JSON.stringify(split, null, 2));
    expect(await readSplitFile(path)).toEqual(split);
  });

  it('refuses a split edited by hand (a train query moved to test), naming the file', async () => {
    const moved = split.queries.train[0]!;
    const edited = {
      ...split,
      queries: {
        ...split.queries,
        train: split.queries.train.slice(1),
        test: [...split.queries.test, moved].sort(),
      },
    };
    const path = join(tmpDir('bfe-read-split-'), 'split.json');
    writeFileSync(path, JSON.stringify(edited, null, 2));
    const error = await readSplitFile(path).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'SPLIT_INVALID' });
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toContain('does not match its content');
  });
});
