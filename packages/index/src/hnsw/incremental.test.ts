import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { rng, unitVectors } from '../testing/index.js';
import { createIncrementalHnsw, loadIncrementalHnsw } from './incremental.js';

const PARAMS = { M: 16, efConstruction: 64, efSearch: 64 };

describe('IncrementalHnsw', () => {
  it('adds and removes key ranges; removed keys are never proposed, also after save and load', async () => {
    const dim = 16;
    const v = unitVectors(600, dim, rng(1));
    const g = createIncrementalHnsw(dim, PARAMS);
    g.add(1000, v, 300);
    g.add(5000, v.subarray(300 * dim), 300);
    expect(g.size).toBe(600);
    expect(g.remove(1000, 100)).toBe(100);
    expect(g.remove(1000, 100)).toBe(0);
    expect(g.size).toBe(500);
    // A vector's own key comes first; a removed one's never.
    const q = v.subarray(0, 200 * dim);
    const res = g.search(q, 200, 10);
    for (let r = 0; r < 200; r++) {
      expect(res.counts[r]).toBe(10);
      const keys = Array.from(res.keys.subarray(r * 10, r * 10 + 10));
      for (const k of keys) expect(k >= 1000 && k < 1100).toBe(false);
      if (r >= 100) expect(keys[0]).toBe(1000 + r);
    }
    const path = join(tmpDir(), 'g.usearch');
    g.save(path);
    const loaded = await loadIncrementalHnsw(path, dim, PARAMS);
    expect(loaded.size).toBe(500);
    expect(loaded.search(q, 200, 10).keys).toEqual(res.keys);
    loaded.add(9000, v, 1); // a loaded graph grows on
    expect(loaded.size).toBe(501);
    await expect(loadIncrementalHnsw(path, dim, PARAMS, { kind: 'i8' })).rejects.toThrow(
      /stores f16/,
    );
    writeFileSync(path, readFileSync(path).subarray(0, 2000));
    await expect(loadIncrementalHnsw(path, dim, PARAMS)).rejects.toThrow();
    expect(() => g.add(-1, v, 1)).toThrow(/safe non-negative/);
    g.dispose();
    expect(() => g.size).toThrow(/after dispose/);
  });
});
