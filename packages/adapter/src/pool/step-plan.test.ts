import { describe, expect, it } from 'vitest';
import { DONE_FLAGS, ITEM_STREAM_ROWS, planStep, stepShared } from './step-plan.js';

function items(plan: { start: Int32Array; positions: Int32Array }): number[][] {
  const out: number[][] = [];
  for (let i = 0; i + 1 < plan.start.length; i++) {
    out.push(Array.from(plan.positions.subarray(plan.start[i], plan.start[i + 1])));
  }
  return out;
}

describe('planStep', () => {
  it('groups a step by candidate set, largest item first', () => {
    // set 0 (100 tokens) has positions 0 and 2; set 1 (10 tokens) position 1
    expect(items(planStep([0, 1, 0], [4, 4, 4], [100, 10, 100], 192))).toEqual([[0, 2], [1]]);
    // a small set with many rows can cost more than a large set with few
    const cost = (tokens: number, rows: number): number => (tokens + 1) * (rows + ITEM_STREAM_ROWS);
    expect(cost(10, 200)).toBeGreaterThan(cost(100, 4));
    expect(items(planStep([0, 1], [4, 200], [100, 10], 1000))).toEqual([[1], [0]]);
  });

  it('cuts a set before a query that would pass the column limit, at least one query an item', () => {
    expect(items(planStep([0, 0, 0, 0], [5, 5, 5, 9], [50, 50, 50, 50], 10))).toEqual([
      [0, 1], // 10 rows: 51 × 26
      [3], // 9 rows: 51 × 25
      [2], // 5 rows: 51 × 21
    ]);
    expect(items(planStep([0], [30], [50], 10))).toEqual([[0]]);
  });

  it('orders equal costs by first position and covers every position once', () => {
    const plan = planStep([2, 1, 0, 1, 2, 0], [3, 3, 3, 3, 3, 3], [7, 7, 7, 7, 7, 7], 192);
    expect(items(plan)).toEqual([
      [0, 4],
      [1, 3],
      [2, 5],
    ]);
    expect(planStep([], [], [], 192).start).toEqual(Int32Array.of(0));
  });
});

describe('stepShared', () => {
  it('reuses buffers that are large enough, zeroing the flags and the gradient used', () => {
    const first = stepShared(3, 8);
    expect(first.control.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(first.control.length).toBe(DONE_FLAGS + 3);
    first.control.fill(1);
    first.grad.fill(5);
    const again = stepShared(2, 4, first);
    expect(again).toBe(first);
    expect(Array.from(again.control)).toEqual([0, 0, 0, 0, 0]);
    expect(Array.from(again.grad)).toEqual([0, 0, 0, 0, 5, 5, 5, 5]);
    const larger = stepShared(4, 4, first);
    expect(larger).not.toBe(first);
    expect(larger.control.length).toBe(DONE_FLAGS + 4);
    expect(larger.losses.length).toBe(4);
    expect(stepShared(2, 16, first)).not.toBe(first);
  });
});
