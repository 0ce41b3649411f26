import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GraphChooser, LAYOUT_FILE, graphGroups, readLayout, writeLayout } from './layout.js';

// Memories 0..6 with 2, 3, 0, 1, 2, 4, 1 tokens (memory 2 has none).
const offsets = Int32Array.of(0, 2, 5, 5, 6, 8, 12, 13);
const rows = (...r: number[]): Int32Array => Int32Array.from(r);

describe('graphGroups', () => {
  it('one graph per candidate set (overlap allowed), keys → bank tokens ascending', () => {
    const groups = graphGroups({
      tokenOffsets: offsets,
      candidateSets: [rows(0, 1, 2), rows(1, 3, 5), rows(2)],
      memoryBank: rows(0, 0, 0, 1, 1, 1, 1),
    });
    // The candidate sets take precedence over memoryBank; the set of memory 2 alone has no
    // tokens and no graph.
    expect(groups.map((g) => g.file)).toEqual(['set-0.usearch', 'set-1.usearch']);
    expect(Array.from(groups[0]!.tokens)).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from(groups[1]!.tokens)).toEqual([2, 3, 4, 5, 8, 9, 10, 11]);
    expect(Array.from(groups[1]!.memories)).toEqual([1, 3, 5]);
  });

  it('per bank without candidate sets, one graph without either; bad sets refused', () => {
    const banked = graphGroups({ tokenOffsets: offsets, memoryBank: rows(1, 0, 1, 0, 1, 0, 1) });
    expect(banked.map((g) => g.file)).toEqual(['bank-0.usearch', 'bank-1.usearch']);
    expect(Array.from(banked[0]!.tokens)).toEqual([2, 3, 4, 5, 8, 9, 10, 11]);
    const one = graphGroups({ tokenOffsets: offsets });
    expect(one.map((g) => g.file)).toEqual(['all.usearch']);
    expect(one[0]!.tokens.length).toBe(13);
    expect(() => graphGroups({ tokenOffsets: offsets, candidateSets: [rows(1, 0)] })).toThrow(
      /ascending/,
    );
    expect(() => graphGroups({ tokenOffsets: offsets, candidateSets: [rows(7)] })).toThrow(
      /not in the bank/,
    );
  });
});

describe('GraphChooser', () => {
  const sets = [rows(0, 1, 2), rows(1, 3, 5), rows(0, 1, 3, 4, 5, 6)];
  const chooser = new GraphChooser(
    graphGroups({ tokenOffsets: offsets, candidateSets: sets }),
    offsets,
  );

  it('the graph whose memories equal the candidates, unfiltered', () => {
    expect(chooser.choose(rows(0, 1, 2))).toEqual({ groups: [0], filtered: false });
    expect(chooser.choose(rows(1, 3, 5))).toEqual({ groups: [1], filtered: false });
    expect(chooser.choose(rows(0, 1, 3, 4, 5, 6))).toEqual({ groups: [2], filtered: false });
  });

  it('else the smallest graph holding every candidate with tokens, filtered', () => {
    expect(chooser.choose(rows(1, 3))).toEqual({ groups: [1], filtered: true });
    // Memory 2 has no tokens: {0, 1} is held by sets 0 (5 tokens) and 2.
    expect(chooser.choose(rows(0, 1))).toEqual({ groups: [0], filtered: true });
    expect(chooser.choose(rows(0, 2, 6))).toEqual({ groups: [2], filtered: true });
  });

  it('else none (the caller searches one graph over every token with a filter)', () => {
    // Two sets, neither holding both memory 0 and memory 5; memory 3 in none.
    const narrow = new GraphChooser(
      graphGroups({ tokenOffsets: offsets, candidateSets: [rows(0, 1), rows(5, 6)] }),
      offsets,
    );
    expect(narrow.choose(rows(0, 5))).toBeUndefined();
    expect(narrow.choose(rows(3))).toBeUndefined(); // memory 3 is in no graph
  });

  it('non-overlapping graphs (per bank): whole graphs that make up the candidates', () => {
    const banked = new GraphChooser(
      graphGroups({ tokenOffsets: offsets, memoryBank: rows(0, 0, 1, 1, 2, 2, 2) }),
      offsets,
    );
    expect(banked.choose(rows(0, 1))).toEqual({ groups: [0], filtered: false });
    expect(banked.choose(rows(0, 1, 4, 5, 6))).toEqual({ groups: [0, 2], filtered: false });
    // Memory 2 has no tokens, so bank 1 is whole with memory 3 alone.
    expect(banked.choose(rows(0, 1, 3))).toEqual({ groups: [0, 1], filtered: false });
    expect(banked.choose(rows(0, 1, 2, 3, 4, 5, 6))).toEqual({
      groups: [0, 1, 2],
      filtered: false,
    });
    expect(banked.choose(rows(4, 5))).toEqual({ groups: [2], filtered: true });
    expect(banked.choose(rows(1, 4))).toBeUndefined();
  });
});

describe('the layout file', () => {
  it('round-trips the candidate sets; absent: undefined; malformed: refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'layout-'));
    try {
      expect(await readLayout(dir)).toBeUndefined();
      await writeLayout(dir, [rows(0, 1), rows(2, 5, 9)]);
      expect((await readLayout(dir))!.map((s) => Array.from(s))).toEqual([
        [0, 1],
        [2, 5, 9],
      ]);
      await writeFile(join(dir, LAYOUT_FILE), '{"candidateSets":[[-1]]}');
      await expect(readLayout(dir)).rejects.toThrow();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
