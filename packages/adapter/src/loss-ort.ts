/**
 * The training loss of a run of queries with MaxSim on an {@link OrtMaxSim} kernel: the same
 * result bit for bit as the loop over `queryLoss`.
 */
import {
  lossFromMaxSim,
  multiPositiveCrossEntropy,
  type AdapterGradients,
  type LossQuery,
} from './loss.js';
import {
  applyAdapterInto,
  createForwardCache,
  type AdapterParams,
  type FloatArray,
} from './model.js';
import type { OrtMaxSim } from './ort-maxsim.js';
import {
  wasmAdapterBackward,
  wasmAdapterForward,
  type BackwardItem,
  type ForwardItem,
} from './wasm-forward.js';

/**
 * The sum of {@link queryLoss} over `queries` (in order), their gradients added into `grads`
 * in the same order, with MaxSim on `kernel` ({@link OrtMaxSim.maxSimMany}): the same result
 * bit for bit as the loop over `queryLoss`.
 */
export async function lossSumOrt(
  kernel: OrtMaxSim,
  params: AdapterParams,
  queries: readonly (LossQuery & {
    readonly candidates: { readonly tokenVectors: Float32Array };
  })[],
  temperature: number,
  grads?: AdapterGradients,
): Promise<number> {
  const { dim, rank } = params;
  const forward = queries.map((query) => ({
    cache: createForwardCache(query.rows, dim, rank),
    adapted: new Float64Array(query.rows * dim),
  }));
  adapterForwardMany(
    kernel,
    params,
    queries.map((query, j) => ({
      tokens: query.tokens,
      rows: query.rows,
      cache: forward[j]!.cache,
      out: forward[j]!.adapted,
    })),
  );
  if (grads === undefined) {
    const results = await kernel.maxSimMany(
      queries.map((query, j) => ({
        query: forward[j]!.adapted,
        rows: query.rows,
        segments: query.candidates,
      })),
    );
    let sum = 0;
    for (let j = 0; j < queries.length; j++) {
      sum += lossFromMaxSim(params, queries[j]!, forward[j]!.cache, results[j]!, temperature);
    }
    return sum;
  }
  // lossFromMaxSim's steps, one candidate set at a time (MatMul, exact maxima, cross-entropy,
  // MaxSim's backward, while the set's tokens are still in cache); each query's own sums, and
  // the losses and the adapter's gradients added in query order as the loop over queryLoss does
  const losses = new Float64Array(queries.length);
  const gradAdapted = queries.map((query) => new Float64Array(query.rows * dim));
  for (const group of groupBySet(queries)) {
    const results = await kernel.maxSimMany(
      group.map((j) => ({
        query: forward[j]!.adapted,
        rows: queries[j]!.rows,
        segments: queries[j]!.candidates,
      })),
    );
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
    kernel.backwardMany(
      group.map((j, g) => ({
        result: results[g]!,
        gradScores: gradScores[g]!,
        segments: queries[j]!.candidates,
        gradQuery: gradAdapted[j]!,
      })),
    );
  }
  let sum = 0;
  for (let j = 0; j < queries.length; j++) sum += losses[j]!;
  adapterBackwardMany(
    kernel,
    params,
    queries.map((query, j) => ({
      tokens: query.tokens,
      rows: query.rows,
      cache: forward[j]!.cache,
      gradOut: gradAdapted[j]!,
    })),
    grads.a,
    grads.b,
  );
  return sum;
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

/**
 * The adapter's backward of several queries in order into `gradA`, `gradB` (`adapterBackward`,
 * bit for bit): on the kernel's WebAssembly instance with the gradients copied in and out
 * once, else by the kernel's own {@link OrtMaxSim.adapterBackward}.
 */
function adapterBackwardMany(
  kernel: OrtMaxSim,
  params: AdapterParams,
  items: readonly (Omit<BackwardItem, 'tokens'> & { readonly tokens: FloatArray })[],
  gradA: Float64Array,
  gradB: Float64Array,
): void {
  const wasm = kernel.wasm;
  if (wasm !== undefined && items.every((item) => item.tokens instanceof Float32Array)) {
    wasmAdapterBackward(wasm, params, items as readonly BackwardItem[], gradA, gradB);
    return;
  }
  for (const { tokens, rows, cache, gradOut } of items) {
    kernel.adapterBackward(params, tokens, rows, cache, gradOut, gradA, gradB);
  }
}
