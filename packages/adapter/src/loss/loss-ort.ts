/**
 * The training loss of a run of queries with MaxSim on an {@link OrtMaxSim} kernel: the losses
 * bit for bit as the loop over `queryLoss`; the gradient too with the JavaScript exact kernel,
 * within float64 rounding of it with the WebAssembly one (MaxSim's backward fused, see
 * `fusedParts`).
 */
import {
  logSumExps,
  multiPositiveCrossEntropy,
  type AdapterGradients,
  type LossQuery,
} from './loss.js';
import { maxSimBackwardBlocked } from './maxsim-exact.js';
import {
  adapterBackward,
  applyAdapterInto,
  createForwardCache,
  type AdapterForwardCache,
  type AdapterParams,
} from '../model.js';
import type { OrtMaxSim } from '../kernels/ort-maxsim.js';
import type { FusedSum } from '../kernels/wasm-kernel.js';
import {
  wasmAdapterBackward,
  wasmAdapterForward,
  type BackwardItem,
  type ForwardItem,
} from '../kernels/wasm-forward.js';

/** A query of the `onnxruntime` kernels: its candidate set shared by identity. */
export type OrtLossQuery = LossQuery & {
  readonly candidates: { readonly tokenVectors: Float32Array };
};

/**
 * The sum of {@link queryLoss} over `queries` (in order), their gradients added into `grads`
 * in the same order, with MaxSim on `kernel` ({@link OrtMaxSim.maxSimMany}): see the file's
 * comment for how equal it is to the loop over `queryLoss`.
 */
export async function lossSumOrt(
  kernel: OrtMaxSim,
  params: AdapterParams,
  queries: readonly OrtLossQuery[],
  temperature: number,
  grads?: AdapterGradients,
): Promise<number> {
  const { dim } = params;
  const losses = new Float64Array(queries.length);
  const gradAdapted =
    grads === undefined ? undefined : queries.map((query) => new Float64Array(query.rows * dim));
  const caches = await queryPartsOrt(kernel, params, queries, temperature, losses, gradAdapted);
  let sum = 0;
  for (let j = 0; j < queries.length; j++) sum += losses[j]!;
  if (grads !== undefined && gradAdapted !== undefined) {
    adapterBackwardMany(kernel, params, queries, caches, gradAdapted, grads);
  }
  return sum;
}

/**
 * The heavy part of {@link lossSumOrt}, query by query: each query's loss into `losses[j]`
 * and, with `gradAdapted`, the gradient with respect to its adapted rows added into
 * `gradAdapted[j]` (zeroed, `[rows × dim]`) — the adapter's forward, MatMul, exact maxima,
 * cross-entropy and MaxSim's backward, one candidate set at a time (while the set's tokens
 * are still in cache). Each query's values are the same bits whatever the other queries in
 * the call. Returns the queries' forward caches, for {@link adapterBackwardMany}.
 */
export async function queryPartsOrt(
  kernel: OrtMaxSim,
  params: AdapterParams,
  queries: readonly OrtLossQuery[],
  temperature: number,
  losses: Float64Array,
  gradAdapted?: readonly Float64Array[],
): Promise<AdapterForwardCache[]> {
  const { dim, rank } = params;
  const caches = queries.map((query) => createForwardCache(query.rows, dim, rank));
  const adapted = queries.map((query) => new Float64Array(query.rows * dim));
  adapterForwardMany(
    kernel,
    params,
    queries.map((query, j) => ({
      tokens: query.tokens,
      rows: query.rows,
      cache: caches[j]!,
      out: adapted[j]!,
    })),
  );
  if (gradAdapted !== undefined && kernel.wasm !== undefined) {
    await fusedParts(kernel, queries, adapted, temperature, losses, gradAdapted);
    return caches;
  }
  for (const group of groupBySet(queries)) {
    const results = await kernel.maxSimMany(
      group.map((j) => ({
        query: adapted[j]!,
        rows: queries[j]!.rows,
        segments: queries[j]!.candidates,
      })),
    );
    if (gradAdapted === undefined) {
      group.forEach((j, g) => {
        losses[j] = multiPositiveCrossEntropy(
          results[g]!.scores,
          queries[j]!.positives,
          temperature,
        );
      });
      continue;
    }
    const gradScores = results.map((result) => new Float64Array(result.memories));
    group.forEach((j, g) => {
      const { positives } = queries[j]!;
      losses[j] = multiPositiveCrossEntropy(
        results[g]!.scores,
        positives,
        temperature,
        gradScores[g],
      );
    });
    group.forEach((j, g) => {
      maxSimBackwardBlocked(
        results[g]!,
        gradScores[g]!,
        dim,
        queries[j]!.candidates,
        gradAdapted[j]!,
      );
    });
  }
  return caches;
}

/**
 * {@link queryPartsOrt}'s losses and gradients on the WebAssembly kernel, MaxSim's backward
 * fused into the maxima's pass (`assembly/fused.ts`): per query, `Σ_m e^{s_m/τ − c} ·
 * x[argmax[i, m]]` is gathered slice by slice while the slice's tokens are in cache; then
 * `∂L/∂q_i = (1/τ n_q) · (e^{c − lseAll} · that − Σ_{m∈P} e^{s_m/τ − lsePos} · x[argmax[i, m]])`,
 * the reference's gradient (`multiPositiveCrossEntropy` then `maxSimBackward`) summed in
 * another order: equal to it within float64 rounding, not bit for bit. The losses are the
 * reference's bit for bit.
 */
async function fusedParts(
  kernel: OrtMaxSim,
  queries: readonly OrtLossQuery[],
  adapted: readonly Float64Array[],
  temperature: number,
  losses: Float64Array,
  gradAdapted: readonly Float64Array[],
): Promise<void> {
  const { dim } = kernel;
  const invTau = 1 / temperature;
  for (const group of groupBySet(queries)) {
    const sums: FusedSum[] = group.map((j) => ({
      acc: new Float64Array(queries[j]!.rows * dim),
      max: -Infinity,
    }));
    const results = await kernel.maxSimMany(
      group.map((j, g) => ({
        query: adapted[j]!,
        rows: queries[j]!.rows,
        segments: queries[j]!.candidates,
        fused: sums[g]!,
      })),
      invTau,
    );
    group.forEach((j, g) => {
      const { rows, memories, argmax, scores } = results[g]!;
      const { positives, candidates } = queries[j]!;
      const { lseAll, lsePos } = logSumExps(scores, positives, temperature);
      losses[j] = lseAll - lsePos;
      if (rows === 0) return;
      const out = gradAdapted[j]!;
      const { acc, max } = sums[g]!;
      const all = Math.exp(max - lseAll);
      for (let k = 0; k < rows * dim; k++) out[k] = all * acc[k]!;
      const x = candidates.tokenVectors;
      for (const m of positives) {
        const w = Math.exp(scores[m]! * invTau - lsePos);
        for (let i = 0; i < rows; i++) {
          const t = argmax[i * memories + m]!;
          if (t < 0) continue;
          for (let k = 0; k < dim; k++) out[i * dim + k]! -= w * x[t * dim + k]!;
        }
      }
      const scale = invTau / rows;
      for (let k = 0; k < rows * dim; k++) out[k]! *= scale;
    });
  }
}

/**
 * The forward caches of `queries` at `params` (the adapter's forward, as {@link queryPartsOrt}
 * computes them: the same bits), for {@link adapterBackwardMany} where the heavy part ran
 * elsewhere.
 */
export function forwardCaches(
  kernel: OrtMaxSim,
  params: AdapterParams,
  queries: readonly LossQuery[],
): AdapterForwardCache[] {
  const { dim, rank } = params;
  const caches = queries.map((query) => createForwardCache(query.rows, dim, rank));
  adapterForwardMany(
    kernel,
    params,
    queries.map((query, j) => ({
      tokens: query.tokens,
      rows: query.rows,
      cache: caches[j]!,
      out: new Float64Array(query.rows * dim),
    })),
  );
  return caches;
}

/**
 * The adapter's backward of `queries` in order into `grads` (`adapterBackward` of each
 * query's `gradAdapted[j]`, bit for bit): on the kernel's WebAssembly instance with the
 * gradients copied in and out once, else in JavaScript.
 */
export function adapterBackwardMany(
  kernel: OrtMaxSim,
  params: AdapterParams,
  queries: readonly LossQuery[],
  caches: readonly AdapterForwardCache[],
  gradAdapted: readonly Float64Array[],
  grads: AdapterGradients,
): void {
  const items = queries.map((query, j) => ({
    tokens: query.tokens,
    rows: query.rows,
    cache: caches[j]!,
    gradOut: gradAdapted[j]!,
  }));
  const wasm = kernel.wasm;
  if (wasm !== undefined && items.every((item) => item.tokens instanceof Float32Array)) {
    wasmAdapterBackward(wasm, params, items as readonly BackwardItem[], grads.a, grads.b);
    return;
  }
  for (const { tokens, rows, cache, gradOut } of items) {
    adapterBackward(params, tokens, rows, cache, gradOut, grads.a, grads.b);
  }
}

/** Indices of `queries` grouped by candidate set (by identity), in order of first appearance. */
function groupBySet(
  queries: readonly { readonly candidates: { readonly tokenVectors: Float32Array } }[],
): number[][] {
  const groups = new Map<Float32Array, number[]>();
  queries.forEach((query, j) => {
    const key = query.candidates.tokenVectors;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [j]);
    else group.push(j);
  });
  return [...groups.values()];
}

/**
 * The adapter's forward pass of several queries (`applyAdapterInto` with a cache, bit for
 * bit): in WebAssembly on the kernel's WebAssembly instance (A and B copied in once), else in
 * JavaScript.
 */
function adapterForwardMany(
  kernel: OrtMaxSim,
  params: AdapterParams,
  items: readonly ForwardItem[],
): void {
  const wasm = kernel.wasm;
  if (wasm !== undefined && items.every((item) => item.tokens instanceof Float32Array)) {
    wasmAdapterForward(wasm, params, items);
    return;
  }
  for (const { out, tokens, rows, cache } of items)
    applyAdapterInto(out, params, tokens, rows, cache);
}
