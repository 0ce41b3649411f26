import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng } from '@bfe/index/testing';
import { Gate, graphBytesPerToken, leastRecent } from './budget.js';
import { GRAPHS_DIR } from './graph-files.js';
import { MemoryStore } from '../../store.js';
import { storeIndexFactory } from '../store-index.js';
import { fakeEmbedder } from '../../testing/index.js';

// The graphs' memory budget (`maxGraphBytes`): a store with three graphed banks and room for
// about one graph keeps the most recently searched one, saves and drops the others, and loads
// a dropped graph back from its file at its next search — searching the same as before.

const DIM = 32;
const embedder = fakeEmbedder(DIM, 'fake-embedder', { jitter: 0.6 });
const WORDS = Array.from({ length: 300 }, (_, i) => `w${i.toString(36)}`);
const PARAMS = { kind: 'f16', M: 16 } as const;

function texts(seed: number, n: number): string[] {
  const rand = rng(seed);
  return Array.from({ length: n }, () =>
    Array.from({ length: 4 + Math.floor(rand() * 9) }, () => WORDS[Math.floor(rand() * 300)]).join(
      ' ',
    ),
  );
}

describe('the graphs’ memory budget', () => {
  it('saves and drops the least recently searched graph, and loads it back unchanged', async () => {
    const dir = tmpDir('bfe-graph-budget-');
    const banks = ['a', 'b', 'c'];
    const made = await MemoryStore.open(dir, { embedder, compactSegments: 0 });
    for (const [i, bank] of banks.entries())
      await made.add(texts(i + 1, 300).map((text, j) => ({ id: `${bank}${j}`, bank, text })));
    const snap = made.snapshot();
    const tokens = Object.fromEntries(
      banks.map((b) => [b, snap.bank(b).tokenOffsets.at(-1)!] as const),
    );
    await made.close();
    const largest = Math.max(...Object.values(tokens)) * graphBytesPerToken(DIM, PARAMS);
    // Room for one graph, not two.
    const index = storeIndexFactory({
      hnswMinTokens: 200,
      maxGraphBytes: Math.ceil(largest * 1.5),
    });
    const store = await MemoryStore.open(dir, { embedder, index, compactSegments: 0 });
    try {
      const query = { bank: 'a', query: 'w1 w2 w3', k: 10 };
      await store.search(query); // starts a's build
      await index.graphsSettled();
      const before = await store.search(query);
      expect(index.graphStats().graphSearches).toBe(1);

      await store.search({ bank: 'b', query: 'w4', k: 3 });
      await index.graphsSettled();
      let stats = index.graphStats();
      expect(Object.keys(stats.banks)).toEqual(['b']);
      expect(stats.evictions).toBe(1);
      expect(stats.heldBytes).toBe(tokens.b! * graphBytesPerToken(DIM, PARAMS));
      expect(existsSync(join(dir, GRAPHS_DIR))).toBe(true);

      // Searched three banks without waiting: one build at a time, one graph held at the end.
      await Promise.all(banks.map((bank) => store.search({ bank, query: 'w5 w6', k: 3 })));
      await index.graphsSettled();
      stats = index.graphStats();
      expect(Object.keys(stats.banks)).toHaveLength(1);
      expect(stats.heldBytes).toBeLessThanOrEqual(Math.ceil(largest * 1.5));

      await store.search(query); // a's graph loaded back from its file
      await index.graphsSettled();
      stats = index.graphStats();
      expect(stats.opened.a).toBe('loaded');
      expect(Object.keys(stats.banks)).toEqual(['a']);
      const graphSearches = stats.graphSearches;
      expect(await store.search(query)).toEqual(before);
      expect(index.graphStats().graphSearches).toBe(graphSearches + 1);
      expect(stats.failures).toEqual([]);
    } finally {
      await store.close();
    }
  });
});

describe('Gate and leastRecent', () => {
  it('lets one holder in at a time, first come first served', async () => {
    const gate = new Gate(1);
    const order: number[] = [];
    await gate.enter();
    const waiting = [1, 2].map((n) => gate.enter().then(() => order.push(n)));
    await Promise.resolve();
    expect(order).toEqual([]);
    gate.leave();
    await waiting[0];
    expect(order).toEqual([1]);
    gate.leave();
    await waiting[1];
    expect(order).toEqual([1, 2]);
    gate.leave();
    await gate.enter(); // the place was freed
  });

  it('picks the eligible entry used least (or most) recently', () => {
    const entries: [string, { used: number }][] = [
      ['x', { used: 3 }],
      ['y', { used: 1 }],
      ['z', { used: 2 }],
    ];
    expect(leastRecent(entries, () => true)?.[0]).toBe('y');
    expect(leastRecent(entries, (k) => k !== 'y')?.[0]).toBe('z');
    expect(leastRecent(entries, () => true, -1)?.[0]).toBe('x');
    expect(leastRecent(entries, () => false)).toBeUndefined();
  });
});
