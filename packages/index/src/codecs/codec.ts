import { fromHalfInto, toHalfInto } from './fp16.js';
import { codecShape, PROJECTED_DIM } from './model.js';
import type { CodecModel, CodecName, ProjectedParams, ScalarParams } from './model.js';
import { project, projectionMatrix } from './projection.js';
import { CODEC_SAMPLE_SEED, hashSampleRows, type TokenIdentity } from './sample-order.js';
import {
  QUANTILE_ROWS,
  decodeSq4Into,
  decodeSq8Into,
  encodeSq4,
  encodeSq8,
  fitScalar,
} from './scalar.js';
import type { ScalarFit, ScalarRange } from './scalar.js';
import { sq4DotsInto, sq8DotsInto, type CodeRowDots } from './scalar-dots.js';

export type { CodeRowDots } from './scalar-dots.js';

/** Options of {@link trainCodec}. */
export interface TrainCodecOptions {
  /** Projection seed of `rp128+sq4` (default 42, METHOD.md §6). */
  readonly seed?: number;
  /** Range fitted per dimension by the scalar codecs (default `minmax`). */
  readonly range?: ScalarRange;
  /**
   * `quantile` only: who the sample's tokens are (memory ids and token offsets). A sample larger
   * than `QUANTILE_ROWS` is cut to the tokens first in the seeded hash order of their identity
   * (`hashSampleRows`), so a bank whose memories are stored in another order gives the same
   * fit. Without it a token is its row, and the fit depends on the file's order.
   */
  readonly tokens?: TokenIdentity;
  /** `quantile` only: the seed of that order (default {@link CODEC_SAMPLE_SEED}, 42). */
  readonly sampleSeed?: number;
}

/** Typed arrays derived once per model (levels as float32, the projection matrix). */
interface Runtime {
  readonly fit?: ScalarFit;
  readonly matrix?: Float64Array;
}
const runtimes = new WeakMap<CodecModel, Runtime>();

function runtime(model: CodecModel): Runtime {
  let rt = runtimes.get(model);
  if (rt !== undefined) return rt;
  const p = model.params as Partial<ProjectedParams>;
  const fit =
    p.lo !== undefined && p.step !== undefined
      ? { lo: Float32Array.from(p.lo), step: Float32Array.from(p.step) }
      : undefined;
  const matrix =
    model.name === 'rp128+sq4'
      ? projectionMatrix(p.seed ?? 0, model.dim, model.codeDim)
      : undefined;
  rt = { ...(fit && { fit }), ...(matrix && { matrix }) };
  runtimes.set(model, rt);
  return rt;
}

function scalarParams(fit: ScalarFit, range: ScalarRange, sampleSeed?: number): ScalarParams {
  return {
    range,
    ...(sampleSeed === undefined ? {} : { sampleSeed }),
    lo: Array.from(fit.lo),
    step: Array.from(fit.step),
  };
}

/**
 * Trains a codec on `n × dim` sample token states (the bank, or a sample of it): `fp32` and
 * `fp16` need no training; `sq8` / `sq4` fit a per-dimension range; `rp128+sq4` draws the
 * seeded projection and fits SQ4 on the projected sample.
 *
 * @example
 * const model = trainCodec('sq4', bank, n, 384); // model.bytesPerToken === 192
 */
export function trainCodec(
  name: CodecName,
  sample: Float32Array,
  n: number,
  dim: number,
  opts: TrainCodecOptions = {},
): CodecModel {
  if (sample.length < n * dim)
    throw new Error(`Sample holds ${sample.length} values, need ${n * dim}.`);
  if ((name === 'sq4' || name === 'rp128+sq4') && dim % 2 !== 0) {
    throw new Error(`${name} packs two dims per byte; dim ${dim} is odd.`);
  }
  const shape = codecShape(name, dim);
  const range = opts.range ?? 'minmax';
  // A quantile fit reads a sample of the tokens, drawn in the seeded hash order of their
  // identity; the seed is saved with the levels. Min/max reads every token.
  const sampleSeed = range === 'quantile' ? (opts.sampleSeed ?? CODEC_SAMPLE_SEED) : undefined;
  const rows =
    sampleSeed === undefined
      ? undefined
      : hashSampleRows(n, QUANTILE_ROWS, sampleSeed, opts.tokens);
  let params: Record<string, unknown> = {};
  if (name === 'sq8' || name === 'sq4') {
    const fit = fitScalar(sample, n, dim, name === 'sq8' ? 256 : 16, range, rows);
    params = scalarParams(fit, range, sampleSeed);
  } else if (name === 'rp128+sq4') {
    const seed = opts.seed ?? 42;
    const projected = project(
      projectionMatrix(seed, dim, PROJECTED_DIM),
      PROJECTED_DIM,
      sample,
      n,
      dim,
    );
    const fit = fitScalar(projected, n, PROJECTED_DIM, 16, range, rows);
    params = { seed, ...scalarParams(fit, range, sampleSeed) };
  }
  return { name, dim, ...shape, params };
}

/**
 * Encodes `n × dim` token states to `n × bytesPerToken` code bytes (fp32/fp16: the raw
 * little-endian floats/halves). fp32 returns a view of `vectors`' bytes, not a copy (a bank's
 * codes would otherwise double its memory: 2.8 GB more on LongMemEval-S); copy it if `vectors`
 * will change.
 *
 * @example
 * encodeTokens(model, vectors, n); // Uint8Array(n · model.bytesPerToken)
 */
export function encodeTokens(model: CodecModel, vectors: Float32Array, n: number): Uint8Array {
  const { dim } = model;
  const x = vectors.subarray(0, n * dim);
  switch (model.name) {
    case 'fp32':
      return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
    case 'fp16': {
      const out = new Uint16Array(n * dim);
      toHalfInto(out, x);
      return new Uint8Array(out.buffer);
    }
    case 'sq8':
      return encodeSq8(runtime(model).fit!, x, n, dim);
    case 'sq4':
      return encodeSq4(runtime(model).fit!, x, n, dim);
    case 'rp128+sq4': {
      const rt = runtime(model);
      const projected = project(rt.matrix!, model.codeDim, x, n, dim);
      return encodeSq4(rt.fit!, projected, n, model.codeDim);
    }
  }
}

/**
 * Decodes the codes of tokens `[start, end)` to `(end − start) × codeDim` float32 vectors
 * (into `out` when given). For `rp128+sq4` these live in the projected space.
 *
 * @example
 * decodeTokens(model, codes, 0, 100); // Float32Array(100 · model.codeDim)
 */
export function decodeTokens(
  model: CodecModel,
  codes: Uint8Array,
  start: number,
  end: number,
  out: Float32Array = new Float32Array((end - start) * model.codeDim),
): Float32Array {
  const { codeDim, bytesPerToken } = model;
  if (codes.length < end * bytesPerToken) {
    throw new Error(
      `Codes hold ${Math.floor(codes.length / bytesPerToken)} tokens, asked for up to ${end}.`,
    );
  }
  if (out.length < (end - start) * codeDim) throw new Error('Output buffer too small.');
  const from = codes.byteOffset + start * bytesPerToken;
  const count = (end - start) * codeDim;
  switch (model.name) {
    case 'fp32':
      out.set(
        from % 4 === 0
          ? new Float32Array(codes.buffer, from, count)
          : new Float32Array(codes.buffer.slice(from, from + count * 4)),
      );
      return out;
    case 'fp16':
      fromHalfInto(
        out,
        from % 2 === 0
          ? new Uint16Array(codes.buffer, from, count)
          : new Uint16Array(codes.buffer.slice(from, from + count * 2)),
      );
      return out;
    case 'sq8':
      decodeSq8Into(out, runtime(model).fit!, codes, start, end, codeDim);
      return out;
    case 'sq4':
    case 'rp128+sq4':
      decodeSq4Into(out, runtime(model).fit!, codes, start, end, codeDim);
      return out;
  }
}

/**
 * Float64 dots of a query row with stored code rows, decoding as they go
 * (`out[h] = Σ_d query[at + d] · decoded(rows[h])[d]`, bit for bit {@link decodeTokens} then
 * `dotsInto`): the scalar codecs' fused kernels (sq8, sq4, rp128+sq4: {@link sq8DotsInto},
 * {@link sq4DotsInto}, in the codec's `codeDim`); undefined for fp32 / fp16.
 */
export function scalarCodeDots(model: CodecModel): CodeRowDots | undefined {
  if (model.name === 'fp32' || model.name === 'fp16') return undefined;
  const fit = runtime(model).fit!;
  return (model.name === 'sq8' ? sq8DotsInto : sq4DotsInto)(fit, model.codeDim);
}

/**
 * Query token vectors in the codec's search space: projected with the model's seeded matrix
 * for `rp128+sq4`, unchanged (a copy) otherwise. Queries are never quantised.
 *
 * @example
 * prepareQuery(model, q, rows); // Float32Array(rows · model.codeDim)
 */
export function prepareQuery(model: CodecModel, queries: Float32Array, rows: number): Float32Array {
  const x = queries.subarray(0, rows * model.dim);
  if (model.name !== 'rp128+sq4') return x.slice();
  return project(runtime(model).matrix!, model.codeDim, x, rows, model.dim);
}
