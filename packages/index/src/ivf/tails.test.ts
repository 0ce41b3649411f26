import { describe, expect, it } from 'vitest';
import { IVF_BLOCK } from './layout.js';
import { TailLists } from './tails.js';
import { WasmScanner } from './wasm-scan.js';

const DIM = 8;

function tailsOf(clusters: number): TailLists {
  const scanner = new WasmScanner({
    dim: DIM,
    residualBits: 4,
    tokens: new Int32Array(0),
    codes: new Uint8Array(0),
  });
  return new TailLists(scanner, clusters, DIM, 4);
}

/** Runs of consecutive blocks in a cluster's list order (what the scan reads in one call each). */
function runs(places: number[]): number {
  const blocks = [...new Set(places.map((p) => Math.floor(p / IVF_BLOCK)))];
  let n = blocks.length > 0 ? 1 : 0;
  for (let i = 1; i < blocks.length; i++) if (blocks[i] !== blocks[i - 1]! + 1) n++;
  return n;
}

describe('TailLists', () => {
  it('grows a tail of many small appends in doubling extents: a few runs, not a block each', () => {
    const tails = tailsOf(3);
    const out = new Int32Array(1);
    const given: number[][] = [[], [], []];
    // Two clusters appended to one token at a time, interleaved (as appends of chunks that put
    // a token or two into each cluster do): 200 tokens each, 13 blocks.
    for (let i = 0; i < 200; i++) {
      for (const c of [0, 1]) {
        tails.reserve(c, 1, out, 0);
        given[c]!.push(out[0]!);
      }
    }
    tails.reserve(2, 40, new Int32Array(40), 0);
    for (const c of [0, 1]) {
      const places = [...tails.places(c)];
      expect(places).toEqual(given[c]);
      // Extents of 1, 1, 2, 4 and 8 blocks: 5 runs (a block a run would be 13).
      expect(runs(places)).toBe(5);
    }
    expect(tails.tokens).toBe(440);
    // Every place has its own code bytes.
    const all = [0, 1, 2].flatMap((c) => [...tails.places(c)]);
    expect(new Set(all.map((p) => tails.codeAt(p))).size).toBe(440);
  });

  it('fills the last block first, then the extent, then a new extent as large as the tail', () => {
    const tails = tailsOf(2);
    const out = new Int32Array(64);
    tails.reserve(0, 20, out, 0); // blocks 0, 1 (an extent of 2)
    expect(Array.from(out.subarray(0, 20))).toEqual(Array.from({ length: 20 }, (_, i) => i));
    tails.reserve(1, 1, out, 0); // block 2
    expect(out[0]).toBe(2 * IVF_BLOCK);
    tails.reserve(0, 13, out, 0); // the rest of block 1 (12), then a new extent of 2: blocks 3, 4
    expect(Array.from(out.subarray(0, 13))).toEqual([
      ...Array.from({ length: 12 }, (_, i) => 20 + i),
      3 * IVF_BLOCK,
    ]);
    tails.reserve(0, 16, out, 0); // 15 more in block 3, then block 4 of the same extent
    expect(out[15]).toBe(4 * IVF_BLOCK);
    expect(runs([...tails.places(0)])).toBe(2);
  });
});
