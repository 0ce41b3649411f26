import { decodeTokens, prepareQuery, scalarCodeDots } from './codecs/codec.js';
import type { CodecModel } from './codecs/model.js';
import { codecChunkScoring } from './codec-scan.js';
import { codeSourceOf, type CodeSource } from './code-source.js';
import { dotsInto, scratchOffsets } from './dots.js';
import type { SimilarityKernel } from './kernel.js';
import { OrtSimilarityKernel } from './ort-kernel.js';
import { ExactTokenIndex } from './token-index.js';
import type { TokenHits, TokenIndex, TokenSearchOptions } from './token-index.js';
import type { TokenStore } from './token-store.js';

/**
 * A token store over a codec's stored codes `[size × bytesPerToken]`: reads decode a range to
 * float32 (`codeDim` per token, into a scratch buffer), `dots` decodes the asked tokens and sums
 * in float64 with {@link dotsInto}, so equal decoded vectors score bit-identically, as in
 * {@link flatTokenStore}. For `fp32` the decoded vectors are the original ones (aligned fp32
 * codes are read in place by `dots`, not copied); the scalar codecs' `dots` decode as they sum
 * ({@link scalarCodeDots}: the same bits, no decoded rows written).
 *
 * @example
 * const store = codecTokenStore(model, codes); // store.dim === model.codeDim
 * store.read(0, 10); // Float32Array [10 * codeDim], decoded
 */
export function codecTokenStore(model: CodecModel, codes: Uint8Array | CodeSource): TokenStore {
  const { codeDim, bytesPerToken } = model;
  if (!(codes instanceof Uint8Array)) return sourceTokenStore(model, codes);
  if (codes.length % bytesPerToken !== 0) {
    throw new Error(`codecTokenStore: ${codes.length} bytes are not codes of ${bytesPerToken}`);
  }
  const size = codes.length / bytesPerToken;
  // fp32 codes on a 4-byte boundary are the vectors themselves: `dots` reads them in place
  // (no per-token decode and copy; the same floats, so the same float64 sums).
  const direct =
    model.name === 'fp32' && codes.byteOffset % 4 === 0
      ? new Float32Array(codes.buffer, codes.byteOffset, size * codeDim)
      : undefined;
  let scratch: Float32Array = new Float32Array(0);
  let rowScratch: Float32Array = new Float32Array(0);
  const grow = (buf: Float32Array, need: number): Float32Array =>
    buf.length >= need ? buf : new Float32Array(Math.max(need, 2 * buf.length));
  const scalar = scalarCodeDots(model);
  return {
    size,
    dim: codeDim,
    read: (start, end) => {
      scratch = grow(scratch, (end - start) * codeDim);
      return decodeTokens(model, codes, start, end, scratch.subarray(0, (end - start) * codeDim));
    },
    dots: (tokens, count, query, at, out) => {
      if (direct !== undefined) {
        const offsets = scratchOffsets(count);
        for (let h = 0; h < count; h++) offsets[h] = tokens[h]! * codeDim;
        dotsInto(direct, offsets, count, query, at, out, codeDim);
        return;
      }
      if (scalar !== undefined) {
        scalar(codes, tokens, count, query, at, out);
        return;
      }
      rowScratch = grow(rowScratch, count * codeDim);
      const offsets = scratchOffsets(count);
      for (let h = 0; h < count; h++) {
        const t = tokens[h]!;
        decodeTokens(model, codes, t, t + 1, rowScratch.subarray(h * codeDim, (h + 1) * codeDim));
        offsets[h] = h * codeDim;
      }
      dotsInto(rowScratch, offsets, count, query, at, out, codeDim);
    },
  };
}

/**
 * {@link codecTokenStore} over codes read by position ({@link CodeSource}): the asked tokens'
 * codes are gathered into a scratch (`source.rows`: ascending neighbours in one read), then
 * decoded and summed with {@link dotsInto} (scalar codecs: summed by {@link scalarCodeDots} from
 * the codes), so the scores are those of the same codes in memory, bit for bit.
 */
function sourceTokenStore(model: CodecModel, source: CodeSource): TokenStore {
  const { codeDim, bytesPerToken } = model;
  if (source.bytesPerToken !== bytesPerToken) {
    throw new Error(
      `codecTokenStore: codes of ${source.bytesPerToken} bytes, ${model.name} needs ${bytesPerToken}`,
    );
  }
  let scratch: Float32Array = new Float32Array(0);
  let rowScratch: Float32Array = new Float32Array(0);
  let byteScratch = new Uint8Array(0);
  const grow = (buf: Float32Array, need: number): Float32Array =>
    buf.length >= need ? buf : new Float32Array(Math.max(need, 2 * buf.length));
  const scalar = scalarCodeDots(model);
  /** The codes of `tokens[0..count)` into `byteScratch`, in order. */
  const gather = (tokens: Int32Array, count: number): void => {
    if (byteScratch.length < count * bytesPerToken) {
      byteScratch = new Uint8Array(Math.max(count * bytesPerToken, 2 * byteScratch.length));
    }
    if (source.rows !== undefined) {
      source.rows(tokens, count, byteScratch);
      return;
    }
    for (let h = 0; h < count; h++) byteScratch.set(source.row(tokens[h]!), h * bytesPerToken);
  };
  return {
    size: source.tokens,
    dim: codeDim,
    read: (start, end) => {
      scratch = grow(scratch, (end - start) * codeDim);
      const out = scratch.subarray(0, (end - start) * codeDim);
      return decodeTokens(model, source.bytes(start, end), 0, end - start, out);
    },
    dots: (tokens, count, query, at, out) => {
      if (scalar !== undefined) {
        // The asked rows' codes gathered in order, then the fused kernel over rows 0..count-1.
        const rows = scratchOffsets(count);
        gather(tokens, count);
        for (let h = 0; h < count; h++) rows[h] = h;
        scalar(byteScratch, rows, count, query, at, out);
        return;
      }
      rowScratch = grow(rowScratch, count * codeDim);
      const offsets = scratchOffsets(count);
      gather(tokens, count);
      decodeTokens(model, byteScratch, 0, count, rowScratch.subarray(0, count * codeDim));
      for (let h = 0; h < count; h++) offsets[h] = h * codeDim;
      dotsInto(rowScratch, offsets, count, query, at, out, codeDim);
    },
    close: () => source.close?.(),
  };
}

/** The memory side of a codec index: its stored codes and the bank's layout. */
export interface CodecSide {
  readonly model: CodecModel;
  /**
   * `[tokens × model.bytesPerToken]` code bytes, in bank token order: in memory, or read by
   * position ({@link CodeSource}: `fileCodeSource` over `codes.bin`, or for fp32 the bank's
   * token file).
   */
  readonly codes: Uint8Array | CodeSource;
  /** `[memories + 1]`: memory `m` owns tokens `tokenOffsets[m]..tokenOffsets[m+1]-1`. */
  readonly tokenOffsets: ArrayLike<number>;
  /** Memory ids: the tie order of equal similarities (`tieOrder`). */
  readonly ids?: readonly string[];
}

/**
 * The exact backend over a codec's stored codes: every candidate token is scored by the kernel
 * ({@link ExactTokenIndex}'s streamed top-k, float64 rescoring and widening) — with the
 * onnxruntime CPU kernel straight from the codes ({@link codecChunkScoring}: cast to float in
 * the graph, scalar codes as `q · lo + (q ⊙ step) · c`), with any other kernel by decoding them —,
 * queries in the codec's search space ({@link prepareQuery}: projected for `rp128+sq4`,
 * never quantised). Float64 rescoring reads the decoded stored codes, so the returned
 * similarities are those of the compressed bank; ties as {@link ExactTokenIndex}.
 * `bestPerMemory` is supported (MaxSim over the decoded codes).
 *
 * @example
 * const index = new CodecExactTokenIndex({ model, codes, tokenOffsets, ids }, kernel);
 * const hits = await index.search(q, rows, 64, { memories }); // q in the input dim (384)
 */
export class CodecExactTokenIndex implements TokenIndex {
  readonly backend = 'exact';
  readonly codec: string;
  /** The queries' (input) dim. */
  readonly dim: number;
  readonly size: number;
  readonly model: CodecModel;
  readonly store: TokenStore;
  readonly #inner: ExactTokenIndex;

  constructor(side: CodecSide, kernel: SimilarityKernel) {
    this.model = side.model;
    this.codec = side.model.name;
    this.dim = side.model.dim;
    this.store = codecTokenStore(side.model, side.codes);
    this.size = this.store.size;
    this.#inner = new ExactTokenIndex(
      {
        tokens: this.store,
        tokenOffsets: side.tokenOffsets,
        ...(side.ids === undefined ? {} : { ids: side.ids }),
      },
      kernel,
      kernel instanceof OrtSimilarityKernel && kernel.executionProvider === 'cpu'
        ? codecChunkScoring(side.model, codeSourceOf(side.codes, side.model.bytesPerToken), kernel)
        : undefined,
    );
  }

  search(
    queries: Float32Array,
    rows: number,
    k: number,
    options: TokenSearchOptions,
  ): Promise<TokenHits> {
    return this.#inner.search(prepareQuery(this.model, queries, rows), rows, k, options);
  }
}
