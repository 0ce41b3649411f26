/**
 * A training worker's part of one pool step on the `onnxruntime` kernels (`step-plan.ts`):
 * first it takes items from the shared counter until none is left, computing each item's
 * queries' losses and gradients with respect to their adapted rows into shared memory; then
 * it waits for the queries of its own run (the step's cost partition) and returns their loss
 * sum and adapter gradient, summed in query order — the same bits as when it computed its
 * run alone (`lossSumOrt`), whichever worker computed which item.
 */
import type { AdapterGradients } from '../loss/loss.js';
import {
  adapterBackwardMany,
  forwardCaches,
  queryPartsOrt,
  type OrtLossQuery,
} from '../loss/loss-ort.js';
import type { AdapterParams } from '../model.js';
import type { OrtMaxSim } from '../kernels/ort-maxsim.js';
import { DONE_FLAGS, type StepPlan, type StepShared } from './step-plan.js';

/** A step request (the `onnxruntime` kernels). */
export interface StepRequest {
  readonly kind: 'step';
  readonly a: Float64Array;
  readonly b: Float64Array;
  /** The step's query indices; position `p` is `queries[p]`. */
  readonly queries: Int32Array;
  readonly gradients: boolean;
  /** Positions `own[0] .. own[1]`: this worker's run, whose sums it returns. */
  readonly own: readonly [number, number];
  readonly plan: StepPlan;
  readonly shared: StepShared;
}

/** How long one wait for another worker's query lasts before the abandon flag is checked. */
const WAIT_MS = 200;

/**
 * This worker's part of `request` over the worker's query list `all`; the loss sum of its
 * run, its gradient added into `grads` (gradient steps). On a failure the step is marked
 * abandoned (so no other worker waits for this one's items) and the error rethrown.
 * `onItem` (a test failpoint) runs as each item is taken, and once after the last when none was.
 */
export async function workerStep(
  kernel: OrtMaxSim,
  params: AdapterParams,
  all: readonly OrtLossQuery[],
  temperature: number,
  request: StepRequest,
  grads?: AdapterGradients,
  onItem?: () => void,
): Promise<number> {
  const { queries, plan, shared } = request;
  const { control, losses, grad } = shared;
  const { dim } = params;
  const query = (p: number): OrtLossQuery => {
    const q = all[queries[p]!];
    if (q === undefined) throw new Error(`train-worker: no query ${queries[p]}`);
    return q;
  };
  const rowStart = new Int32Array(queries.length + 1);
  for (let p = 0; p < queries.length; p++) rowStart[p + 1] = rowStart[p]! + query(p).rows;
  const gradOf = (p: number): Float64Array =>
    grad.subarray(rowStart[p]! * dim, rowStart[p + 1]! * dim);
  try {
    const items = plan.start.length - 1;
    let taken = 0;
    for (let i = Atomics.add(control, 0, 1); i < items; i = Atomics.add(control, 0, 1)) {
      abandoned(control);
      taken += 1;
      onItem?.();
      const positions = Array.from(plan.positions.subarray(plan.start[i], plan.start[i + 1]));
      const local = new Float64Array(positions.length);
      await queryPartsOrt(
        kernel,
        params,
        positions.map(query),
        temperature,
        local,
        request.gradients ? positions.map(gradOf) : undefined,
      );
      positions.forEach((p, j) => {
        losses[p] = local[j]!;
        Atomics.store(control, DONE_FLAGS + p, 1);
        Atomics.notify(control, DONE_FLAGS + p);
      });
    }
    if (taken === 0) onItem?.();
    const [from, to] = request.own;
    let sum = 0;
    for (let p = from; p < to; p++) {
      waitFor(control, p);
      sum += losses[p]!;
    }
    if (grads !== undefined) {
      const run: OrtLossQuery[] = [];
      const gradAdapted: Float64Array[] = [];
      for (let p = from; p < to; p++) {
        run.push(query(p));
        gradAdapted.push(gradOf(p));
      }
      const caches = forwardCaches(kernel, params, run);
      adapterBackwardMany(kernel, params, run, caches, gradAdapted, grads);
    }
    return sum;
  } catch (error) {
    abandon(control);
    throw error;
  }
}

/** Marks the step abandoned and wakes every waiter. */
export function abandon(control: Int32Array): void {
  Atomics.store(control, 1, 1);
  for (let i = DONE_FLAGS; i < control.length; i++) Atomics.notify(control, i);
}

function abandoned(control: Int32Array): void {
  if (Atomics.load(control, 1) !== 0) {
    throw new Error('training step abandoned: another worker failed');
  }
}

/** Blocks until position `p` is done (its loss and gradient written), or the step abandoned. */
function waitFor(control: Int32Array, p: number): void {
  while (Atomics.load(control, DONE_FLAGS + p) !== 1) {
    abandoned(control);
    Atomics.wait(control, DONE_FLAGS + p, 0, WAIT_MS);
  }
}
