// Reading onnxruntime's feeds and outputs for the kernels' error messages and typed results.
import type * as ort from 'onnxruntime-node';

/** `name: type [dims]` of each feed, for an error message. */
export function describeFeeds(feeds: Record<string, ort.Tensor>): string {
  return Object.entries(feeds)
    .map(([name, t]) => `${name}: ${t.type} [${t.dims.join(', ')}]`)
    .join('; ');
}

/** Output `name` as `type` with `length` values, or an error naming what came instead. */
export function tensorData(
  out: ort.InferenceSession.ReturnType,
  name: string,
  type: 'float32' | 'int32' | 'int64',
  length: number,
): Float32Array | Int32Array | BigInt64Array {
  const t = out[name];
  if (t === undefined || t.type !== type || t.data.length !== length) {
    throw new Error(
      `OrtSimilarityKernel: output ${name} is ${t === undefined ? 'missing' : `${t.type} [${t.dims.join(', ')}]`}, expected ${type} with ${length} values`,
    );
  }
  return t.data as Float32Array | Int32Array | BigInt64Array;
}
