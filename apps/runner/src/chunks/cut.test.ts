import { describe, expect, it } from 'vitest';
import type { TokenizedText } from '@bfe/encoder';
import { cutChunks } from './cut.js';

const CLS = 101;
const SEP = 102;

/** A tokenisation as MiniLM lays it out: `head` leading non-content ids, content, `[SEP]`. */
function tokenized(content: readonly number[], head: readonly number[] = [CLS]): TokenizedText {
  const ids = Int32Array.from([...head, ...content, SEP]);
  const mask = Uint8Array.from([...head.map(() => 0), ...content.map(() => 1), 0]);
  return { ids, content: mask, truncated: false };
}

/** Seeded integers (a fixed LCG), so a failure names its case. */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s;
  };
}

describe('cutChunks: independent, non-overlapping windows of N tokens', () => {
  it('matches the definition ([CLS] + N − 2 content + [SEP], consecutive, only the last short)', () => {
    const next = lcg(7);
    for (let trial = 0; trial < 200; trial++) {
      const n = next() % 400;
      const size = 3 + (next() % 140);
      const content = Array.from({ length: n }, () => 1000 + (next() % 30000));
      const cut = cutChunks(tokenized(content), size);
      // The reference, straight from the definition: plain arrays, sliced.
      const expected: number[][] = [];
      if (n + 2 <= size) expected.push([CLS, ...content, SEP]);
      else
        for (let at = 0; at < n; at += size - 2)
          expected.push([CLS, ...content.slice(at, at + size - 2), SEP]);
      expect(cut.fits, `n ${n} size ${size}`).toBe(n + 2 <= size);
      expect(cut.content).toBe(n);
      expect(
        cut.windows.map((w) => [...w.ids]),
        `n ${n} size ${size}`,
      ).toEqual(expected);
      if (!cut.fits) {
        expect(cut.windows.map((w) => w.first)).toEqual(expected.map((_, i) => i * (size - 2)));
        expect(cut.windows.map((w) => w.count)).toEqual(expected.map((x) => x.length - 2));
      }
      for (const w of cut.windows) expect(w.ids).toBeInstanceOf(Int32Array);
    }
  });

  it('counts a passage prefix among the leading tokens, as model.window.size does', () => {
    const prefix = [CLS, 5, 6]; // e.g. [CLS] passage :
    const content = Array.from({ length: 10 }, (_, i) => 200 + i);
    const cut = cutChunks(tokenized(content, prefix), 8); // 3 + 4 content + 1
    expect(cut.windows.map((w) => [...w.ids])).toEqual([
      [CLS, 5, 6, 200, 201, 202, 203, SEP],
      [CLS, 5, 6, 204, 205, 206, 207, SEP],
      [CLS, 5, 6, 208, 209, SEP],
    ]);
  });

  it('leaves a memory of exactly N tokens whole, and cuts one of N + 1', () => {
    const content = Array.from({ length: 126 }, (_, i) => 300 + i);
    const whole = tokenized(content);
    const fits = cutChunks(whole, 128);
    expect(fits.fits).toBe(true);
    expect(fits.windows).toHaveLength(1);
    expect(fits.windows[0]!.ids).toBe(whole.ids);
    const over = cutChunks(tokenized([...content, 999]), 128);
    expect(over.fits).toBe(false);
    expect(over.windows.map((w) => w.count)).toEqual([126, 1]);
  });

  it('refuses a window with no room for content', () => {
    expect(() => cutChunks(tokenized([1, 2, 3], [CLS, 5]), 3)).toThrow(/no room for content/);
  });
});
