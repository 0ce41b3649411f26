import type { CandidateBank } from './candidate-bank.js';
import { codeSourceOf, type CodeSource } from './code-source.js';
import type { CodeElement } from './codec-graph.js';
import type { CodecModel } from './codecs/model.js';
import type { OrtSimilarityKernel } from './ort-kernel.js';
import type { ChunkScoring } from './token-index.js';

/** The graph's code element of each codec. */
function elementOf(model: CodecModel): CodeElement {
  switch (model.name) {
    case 'fp32':
      return 'float';
    case 'fp16':
      return 'float16';
    case 'sq8':
      return 'uint8';
    case 'sq4':
    case 'rp128+sq4':
      return 'nibbles';
  }
}

/** Elements per token as stored. */
function widthOf(model: CodecModel, element: CodeElement): number {
  return element === 'nibbles' ? model.codeDim / 2 : model.codeDim;
}

/** The per-dimension levels of a scalar codec, as float32 (as the decoder reads them). */
function levelsOf(model: CodecModel): { lo: Float32Array; step: Float32Array; top: number } {
  const p = model.params as { lo: number[]; step: number[] };
  return {
    lo: Float32Array.from(p.lo),
    step: Float32Array.from(p.step),
    top: model.name === 'sq8' ? 255 : 15,
  };
}

/**
 * The exact search's chunk scoring over a codec's stored codes ({@link ChunkScoring}): each
 * chunk's codes are gathered as bytes (a view when the chunk is one run of the bank) and
 * scored by the kernel's codec graph (`OrtSimilarityKernel.codecTopK`: Cast to float in
 * onnxruntime, never decoded in JavaScript). Scalar codes (`x_d = lo_d + c_d · step_d`) are
 * scored as `q · lo + (q ⊙ step) · c`; the float32 error bound of that form is
 * `Σ_d |q_d| · (|lo_d| + L · step_d)` (L the top level), which replaces `‖q‖` in the
 * re-ranking's exactness test, so the float64-rescored top-k is the same as over decoded
 * vectors. fp32 / fp16 codes are multiplied as they are (the cast is exact).
 *
 * @example
 * const index = new ExactTokenIndex(side, kernel, codecChunkScoring(model, codes, kernel));
 */
export function codecChunkScoring(
  model: CodecModel,
  codes: Uint8Array | CodeSource,
  kernel: OrtSimilarityKernel,
): ChunkScoring {
  const source = codeSourceOf(codes, model.bytesPerToken);
  const element = elementOf(model);
  const width = widthOf(model, element);
  const dim = model.codeDim;
  const bpt = model.bytesPerToken;
  const scalar = element === 'uint8' || element === 'nibbles' ? levelsOf(model) : undefined;
  // Graph column of dim d: nibbles are unpacked as all low (even dims), then all high (odd).
  const column = Int32Array.from({ length: dim }, (_, d) =>
    element === 'nibbles' ? (d & 1) * (dim >> 1) + (d >> 1) : d,
  );
  const bound = new Float64Array(dim);
  if (scalar !== undefined) {
    for (let d = 0; d < dim; d++) {
      bound[d] = Math.abs(scalar.lo[d]!) + scalar.top * scalar.step[d]!;
    }
  }
  let gathered = new Uint8Array(0);
  return (bank: CandidateBank) => {
    let lastQueries: Float32Array | undefined;
    let transformed = new Float32Array(0);
    let bias = new Float32Array(0);
    const prepare = (queries: Float32Array, rows: number): void => {
      if (queries === lastQueries) return;
      lastQueries = queries;
      transformed = new Float32Array(rows * dim);
      bias = new Float32Array(rows);
      if (scalar === undefined) {
        transformed.set(queries.subarray(0, rows * dim));
        return;
      }
      const { lo, step } = scalar;
      for (let r = 0; r < rows; r++) {
        const at = r * dim;
        let b = 0;
        for (let d = 0; d < dim; d++) {
          const q = queries[at + d]!;
          b += q * lo[d]!;
          transformed[at + column[d]!] = q * step[d]!;
        }
        bias[r] = b;
      }
    };
    const chunkCodes = (start: number, end: number): Uint8Array => {
      const runs: number[] = [];
      bank.forEachRun(start, end, (a, b) => runs.push(a, b));
      if (runs.length === 2) return source.bytes(runs[0]!, runs[1]!);
      const need = (end - start) * bpt;
      if (gathered.length < need) gathered = new Uint8Array(need);
      let o = 0;
      for (let i = 0; i < runs.length; i += 2) {
        const part = source.bytes(runs[i]!, runs[i + 1]!);
        gathered.set(part, o);
        o += part.length;
      }
      return gathered.subarray(0, need);
    };
    return {
      chunkTopK: (queries, rows, start, end, k, withScores) => {
        prepare(queries, rows);
        const n = end - start;
        const bytes = chunkCodes(start, end);
        const typed =
          element === 'float'
            ? aligned(bytes, 4, (b) => new Float32Array(b.buffer, b.byteOffset, n * width))
            : element === 'float16'
              ? aligned(bytes, 2, (b) => new Uint16Array(b.buffer, b.byteOffset, n * width))
              : bytes;
        return kernel.codecTopK(element, width, transformed, bias, rows, typed, n, k, withScores);
      },
      ...(scalar === undefined
        ? {}
        : {
            queryBound: (queries: Float32Array, row: number) => {
              let s = 0;
              for (let d = 0; d < dim; d++) s += Math.abs(queries[row * dim + d]!) * bound[d]!;
              return s;
            },
          }),
    };
  };
}

/** A typed view of `bytes`, through an aligned copy when its offset does not allow one. */
function aligned<T>(bytes: Uint8Array, align: number, view: (b: Uint8Array) => T): T {
  return view(bytes.byteOffset % align === 0 ? bytes : bytes.slice());
}
