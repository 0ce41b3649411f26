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
import { applyAdapterInto, createForwardCache, type AdapterParams } from './model.js';
import type { OrtMaxSim } from './ort-maxsim.js';

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
  const forward = queries.map((query) => {
    const cache = createForwardCache(query.rows, dim, rank);
    const adapted = applyAdapterInto(
      new Float64Array(query.rows * dim),
      params,
      query.tokens,
      query.rows,
      cache,
    );
    return { cache, adapted };
  });
  const results = await kernel.maxSimMany(
    queries.map((query, j) => ({
      query: forward[j]!.adapted,
      rows: query.rows,
      segments: query.candidates,
    })),
  );
  let sum = 0;
  if (grads === undefined) {
    for (let j = 0; j < queries.length; j++) {
      sum += lossFromMaxSim(params, queries[j]!, forward[j]!.cache, results[j]!, temperature);
    }
    return sum;
  }
  // lossFromMaxSim's steps, MaxSim's backward batched per candidate set (each query's own sums)
  const gradScores = results.map((result) => new Float64Array(result.memories));
  for (let j = 0; j < queries.length; j++) {
    const { positives } = queries[j]!;
    sum += multiPositiveCrossEntropy(results[j]!.scores, positives, temperature, gradScores[j]);
  }
  const gradAdapted = queries.map((query) => new Float64Array(query.rows * dim));
  kernel.backwardMany(
    queries.map((query, j) => ({
      result: results[j]!,
      gradScores: gradScores[j]!,
      segments: query.candidates,
      gradQuery: gradAdapted[j]!,
    })),
  );
  for (let j = 0; j < queries.length; j++) {
    const { tokens, rows } = queries[j]!;
    kernel.adapterBackward(
      params,
      tokens,
      rows,
      forward[j]!.cache,
      gradAdapted[j]!,
      grads.a,
      grads.b,
    );
  }
  return sum;
}
