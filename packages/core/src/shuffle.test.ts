import { describe, expect, it } from 'vitest';
import { ConfigError } from './errors.js';
import { MAX_SEED, checkSeed, seededPermutation, seededShuffle } from './shuffle.js';

// The expected orders are literals recorded from the implementations these functions replaced
// (the splits' shuffle and the HNSW insert order), so a change of either draw fails here.
describe('the one seeded shuffle', () => {
  it('seededShuffle: the splits’ order, fixed by the seed', () => {
    expect(seededShuffle(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], 42)).toEqual([
      'b',
      'd',
      'e',
      'c',
      'a',
      'h',
      'g',
      'f',
    ]);
    expect(seededShuffle(['a', 'b', 'c'], 43)).not.toEqual(seededShuffle(['a', 'b', 'c'], 44));
    const items = Array.from({ length: 1000 }, (_, i) => i);
    expect([...seededShuffle(items, 7)].sort((x, y) => x - y)).toEqual(items);
    expect(items[0]).toBe(0); // a copy: the input is left as it was
  });

  it('seededPermutation: the HNSW build’s insert order, fixed by the seed', () => {
    expect(Array.from(seededPermutation(10, 42))).toEqual([6, 1, 2, 5, 3, 8, 4, 0, 7, 9]);
    expect(Array.from(seededPermutation(0, 42))).toEqual([]);
    const p = seededPermutation(5000, 1);
    expect(Array.from(p).sort((x, y) => x - y)).toEqual(Array.from({ length: 5000 }, (_, i) => i));
  });

  it('refuses seeds outside 32 bits', () => {
    expect(() => checkSeed(-1)).toThrow(ConfigError);
    expect(() => checkSeed(MAX_SEED + 1)).toThrow(ConfigError);
    expect(() => checkSeed(1.5)).toThrow(ConfigError);
    expect(() => seededShuffle([1], -1)).toThrow(ConfigError);
    checkSeed(MAX_SEED);
  });
});
