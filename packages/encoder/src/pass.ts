import type { EncoderSession } from './onnx-session.js';
import type { TextTokenizer, TokenizedText } from './tokenizer.js';

/** How a model pools its token states into one vector (METHOD.md §1). */
export interface PoolingSpec {
  readonly pooling: 'mean' | 'cls' | 'last';
  readonly normalize: boolean;
}

/** The outputs of one encoder pass over a contiguous range of texts, in text order. */
export interface EncodedChunk {
  /** Index of the first text of the chunk in the pass's input. */
  readonly start: number;
  readonly count: number;
  readonly dim: number;
  /** Native pooled vectors `[count * dim]`. */
  readonly pooled: Float32Array;
  /** Content tokens kept per text `[count]`. */
  readonly nTokens: Int32Array;
  /** 1 where truncation dropped tokens `[count]`. */
  readonly truncated: Uint8Array;
  /** For every content token, in text order: its text's index in the pass input. */
  readonly tokenOwner: Int32Array;
  /** Its position in the model input (0 is the first special token). */
  readonly tokenPosition: Int32Array;
  readonly tokenId: Int32Array;
  /** L2-normalised last-layer states `[tokens * dim]`. */
  readonly tokenVectors: Float32Array;
}

export interface PassOptions {
  /** Prefix prepended for the pooled vector and excluded from content tokens. */
  readonly prefix?: string;
  /** Texts per chunk: bounds memory (a chunk's states are held until it is emitted). */
  readonly chunkSize?: number;
  /** Padded tokens per ONNX batch (batch × longest length). */
  readonly maxBatchTokens?: number;
  readonly maxBatchSize?: number;
  /**
   * Tokenise the next chunk while this one runs through the graph (the tokenizer works on a
   * libuv thread). Same outputs either way. Default false.
   */
  readonly overlapTokenization?: boolean;
  /** Called after every batch with texts done so far and content tokens kept. */
  readonly onProgress?: (done: number, total: number, tokens: number) => void;
}

/**
 * One frozen pass over `texts`: tokenise, bucket by length (sorted within a chunk, so little
 * padding is wasted), run the graph, pool natively, and keep the L2-normalised states of the
 * content tokens only. Yields chunks in text order, so a writer can stream them.
 *
 * @example
 * for await (const c of encodePass(session, tokenizer, spec, ['hello world'])) {
 *   c.pooled.length === c.dim; // one 384-d vector for MiniLM
 *   c.tokenVectors.length === c.nTokens[0]! * c.dim; // 2 content tokens
 * }
 */
export async function* encodePass(
  session: EncoderSession,
  tokenizer: TextTokenizer,
  spec: PoolingSpec,
  texts: readonly unknown[],
  options: PassOptions = {},
): AsyncGenerator<EncodedChunk> {
  const chunkSize = options.chunkSize ?? 2048;
  const maxBatchTokens = options.maxBatchTokens ?? 8192;
  const maxBatchSize = options.maxBatchSize ?? 32;
  const overlap = options.overlapTokenization ?? false;
  const tokenize = (start: number): Promise<TokenizedText[]> => {
    const pending = tokenizer.encode(texts.slice(start, start + chunkSize), options.prefix ?? '');
    // Handled here so a failure while the previous chunk runs is not an unhandled rejection;
    // it still surfaces where the promise is awaited.
    pending.catch(() => undefined);
    return pending;
  };
  let done = 0;
  let keptTokens = 0;
  let next: Promise<TokenizedText[]> | undefined;
  for (let start = 0; start < texts.length; start += chunkSize) {
    const tokenized = await (next ?? tokenize(start));
    next = overlap && start + chunkSize < texts.length ? tokenize(start + chunkSize) : undefined;
    const count = tokenized.length;
    const order = Array.from({ length: count }, (_, i) => i).sort(
      (a, b) => tokenized[b]!.ids.length - tokenized[a]!.ids.length || a - b,
    );
    let dim = 0;
    const pooled: Float32Array[] = new Array<Float32Array>(count);
    const tokens: Float32Array[] = new Array<Float32Array>(count);
    let at = 0;
    while (at < count) {
      const longest = tokenized[order[at]!]!.ids.length;
      const size = Math.max(
        1,
        Math.min(maxBatchSize, Math.floor(maxBatchTokens / longest), count - at),
      );
      const rows = order.slice(at, at + size);
      const batch = await runBatch(
        session,
        rows.map((r) => tokenized[r]!),
        longest,
      );
      dim = batch.dim;
      for (let b = 0; b < rows.length; b++) {
        const row = rows[b]!;
        const t = tokenized[row]!;
        const base = b * longest * dim;
        pooled[row] = poolRow(batch.states, base, t.ids.length, dim, spec);
        tokens[row] = contentRows(batch.states, base, t, dim);
        keptTokens += tokens[row]!.length / dim;
      }
      at += size;
      done += rows.length;
      options.onProgress?.(done, texts.length, keptTokens);
    }
    yield assemble(start, tokenized, pooled, tokens, dim);
  }
}

async function runBatch(
  session: EncoderSession,
  batch: readonly TokenizedText[],
  seq: number,
): Promise<{ states: Float32Array; dim: number }> {
  const n = batch.length;
  const ids = new BigInt64Array(n * seq);
  const mask = new BigInt64Array(n * seq);
  for (let b = 0; b < n; b++) {
    const t = batch[b]!.ids;
    const base = b * seq;
    for (let j = 0; j < t.length; j++) {
      ids[base + j] = BigInt(t[j]!);
      mask[base + j] = 1n;
    }
  }
  return session.run(ids, mask, n, seq);
}

/** Native pooling over the `length` real tokens of one row (padding is never included). */
function poolRow(
  states: Float32Array,
  base: number,
  length: number,
  dim: number,
  spec: PoolingSpec,
): Float32Array {
  const out = new Float32Array(dim);
  if (spec.pooling === 'mean') {
    // Accumulate in float64: a 128-token sum in float32 drifts by more than parity allows.
    const acc = new Float64Array(dim);
    for (let j = 0; j < length; j++) {
      const off = base + j * dim;
      for (let k = 0; k < dim; k++) acc[k]! += states[off + k]!;
    }
    for (let k = 0; k < dim; k++) out[k] = acc[k]! / length;
  } else {
    const off = base + (spec.pooling === 'cls' ? 0 : length - 1) * dim;
    out.set(states.subarray(off, off + dim));
  }
  if (spec.normalize) normalizeInto(out, out, 0, dim);
  return out;
}

/** The L2-normalised states of a row's content tokens, `[nContent * dim]`. */
function contentRows(
  states: Float32Array,
  base: number,
  t: TokenizedText,
  dim: number,
): Float32Array {
  let n = 0;
  for (let j = 0; j < t.content.length; j++) n += t.content[j]!;
  const out = new Float32Array(n * dim);
  let w = 0;
  for (let j = 0; j < t.content.length; j++) {
    if (t.content[j] === 0) continue;
    out.set(states.subarray(base + j * dim, base + (j + 1) * dim), w * dim);
    normalizeInto(out, out, w * dim, dim);
    w++;
  }
  return out;
}

/** Writes the unit vector of `src[off, off+dim)` into `dst` at the same offset. */
function normalizeInto(dst: Float32Array, src: Float32Array, off: number, dim: number): void {
  let ss = 0;
  for (let k = 0; k < dim; k++) {
    const v = src[off + k]!;
    ss += v * v;
  }
  const inv = 1 / Math.max(Math.sqrt(ss), 1e-12);
  for (let k = 0; k < dim; k++) dst[off + k] = src[off + k]! * inv;
}

function assemble(
  start: number,
  tokenized: readonly TokenizedText[],
  pooled: readonly Float32Array[],
  tokens: readonly Float32Array[],
  dim: number,
): EncodedChunk {
  const count = tokenized.length;
  let total = 0;
  for (const t of tokens) total += t.length / dim;
  const out: EncodedChunk = {
    start,
    count,
    dim,
    pooled: new Float32Array(count * dim),
    nTokens: new Int32Array(count),
    truncated: new Uint8Array(count),
    tokenOwner: new Int32Array(total),
    tokenPosition: new Int32Array(total),
    tokenId: new Int32Array(total),
    tokenVectors: new Float32Array(total * dim),
  };
  let w = 0;
  for (let i = 0; i < count; i++) {
    const t = tokenized[i]!;
    out.pooled.set(pooled[i]!, i * dim);
    out.truncated[i] = t.truncated ? 1 : 0;
    out.tokenVectors.set(tokens[i]!, w * dim);
    const before = w;
    for (let j = 0; j < t.content.length; j++) {
      if (t.content[j] === 0) continue;
      out.tokenOwner[w] = start + i;
      out.tokenPosition[w] = j;
      out.tokenId[w] = t.ids[j]!;
      w++;
    }
    out.nTokens[i] = w - before;
  }
  return out;
}
