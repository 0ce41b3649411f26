/**
 * How a pool step shares its work (the `onnxruntime` kernels): the step's queries are cut
 * into **items** — the queries of one candidate set, in step order, at most `columns` rows
 * each — that the workers take one at a time from a shared counter, largest first, whoever is
 * free. A set's tokens are then streamed once per item rather than once per worker that has
 * one of its queries, and a worker that finishes early takes the next item instead of
 * waiting. Which worker computes a query never changes its bits (each query's heavy part is
 * its own); what is summed, and in which order, is fixed by the step's cost partition alone
 * (`partition` in `loss-pool.ts`), as before.
 */

/** Rows an item is charged for streaming its set once (one MLAS column block; predeclared). */
export const ITEM_STREAM_ROWS = 16;

/**
 * Boundaries `[0, …, n]` (`parts + 1` values, non-decreasing) that cut `costs` into `parts`
 * contiguous runs of about equal total cost: boundary `w` is the prefix closest to
 * `w/parts` of the total. Depends on the costs and `parts` only, so the split — and the
 * summation order — is the same on every run.
 * @example partition(Float64Array.of(1, 1, 1, 3), 2); // [0, 3, 4]
 */
export function partition(costs: ArrayLike<number>, parts: number): number[] {
  const n = costs.length;
  const prefix = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) prefix[i + 1] = prefix[i]! + costs[i]!;
  const total = prefix[n]!;
  const bounds = [0];
  let i = 0;
  for (let w = 1; w < parts; w++) {
    const target = (total * w) / parts;
    while (i < n && prefix[i + 1]! <= target) i += 1;
    // i is the last prefix ≤ target; take i + 1 when it is closer
    const cut = i < n && prefix[i + 1]! - target < target - prefix[i]! ? i + 1 : i;
    bounds.push(Math.max(cut, bounds[w - 1]!));
  }
  bounds.push(n);
  return bounds;
}

/** The items of a step: item `i` is positions `positions[start[i] .. start[i + 1]]`. */
export interface StepPlan {
  readonly start: Int32Array;
  readonly positions: Int32Array;
}

/**
 * The items of a step whose position `p` (its index in the step's query list) has `rows[p]`
 * rows against set `sets[p]` of `tokens[p]` tokens: per set, in order of first appearance,
 * its positions in step order, cut before a query that would take the item past `columns`
 * rows (an item has at least one query); the items sorted by estimated cost, `(tokens + 1) ×
 * (rows + ITEM_STREAM_ROWS)`, largest first, ties by first position. Depends on its inputs only.
 * @example planStep([0, 1, 0], [4, 4, 4], [100, 10, 100], 192); // start [0, 2, 3], positions [0, 2, 1]
 */
export function planStep(
  sets: ArrayLike<number>,
  rows: ArrayLike<number>,
  tokens: ArrayLike<number>,
  columns: number,
): StepPlan {
  const bySet = new Map<number, number[]>();
  for (let p = 0; p < sets.length; p++) {
    const group = bySet.get(sets[p]!);
    if (group === undefined) bySet.set(sets[p]!, [p]);
    else group.push(p);
  }
  const items: { positions: number[]; cost: number }[] = [];
  for (const group of bySet.values()) {
    let current: number[] = [];
    let width = 0;
    const flush = (): void => {
      if (current.length === 0) return;
      const t = tokens[current[0]!]!;
      items.push({ positions: current, cost: (t + 1) * (width + ITEM_STREAM_ROWS) });
      current = [];
      width = 0;
    };
    for (const p of group) {
      if (current.length > 0 && width + rows[p]! > columns) flush();
      current.push(p);
      width += rows[p]!;
    }
    flush();
  }
  items.sort((x, y) => y.cost - x.cost || x.positions[0]! - y.positions[0]!);
  const start = new Int32Array(items.length + 1);
  const positions = new Int32Array(sets.length);
  let at = 0;
  items.forEach((item, i) => {
    positions.set(item.positions, at);
    at += item.positions.length;
    start[i + 1] = at;
  });
  return { start, positions };
}

/**
 * What the workers of one step share (views over `SharedArrayBuffer`s, reused from step to
 * step): `control[0]` the next item to take, `control[1]` set to 1 when the step is abandoned,
 * `control[2 + p]` set to 1 once position `p`'s loss and gradient are written; `losses[p]`;
 * `grad` each position's gradient with respect to its adapted rows, from row `rowStart[p]`
 * (gradient steps only).
 */
export interface StepShared {
  readonly control: Int32Array;
  readonly losses: Float64Array;
  readonly grad: Float64Array;
}

/** Index of the first done flag in {@link StepShared.control}. */
export const DONE_FLAGS = 2;

/**
 * Shared step buffers for `positions` queries and `values` gradient entries: `previous` when
 * large enough (its flags and the first `values` gradient entries zeroed), else new ones.
 */
export function stepShared(positions: number, values: number, previous?: StepShared): StepShared {
  if (
    previous !== undefined &&
    previous.control.length >= DONE_FLAGS + positions &&
    previous.losses.length >= positions &&
    previous.grad.length >= values
  ) {
    previous.control.fill(0);
    previous.grad.fill(0, 0, values);
    return previous;
  }
  return {
    control: new Int32Array(new SharedArrayBuffer(4 * (DONE_FLAGS + positions))),
    losses: new Float64Array(new SharedArrayBuffer(8 * Math.max(positions, 1))),
    grad: new Float64Array(new SharedArrayBuffer(8 * Math.max(values, 1))),
  };
}
