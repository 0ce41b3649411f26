import type { EncoderSession } from './onnx-session.js';
import type { TextTokenizer, TokenizedText } from './tokenizer.js';
import { splitWindows, wholeText, type WindowedText, type WindowSpec } from './window.js';

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
  /** Windowed passes only: encoder rows (windows) run per text `[count]` (1: not windowed). */
  readonly windows?: Int32Array;
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
   * Padded attention cells per ONNX batch, rows × longest² (default 32 × 128²): onnxruntime's
   * CPU arena keeps the high-water mark of its attention buffers, which grow with the square of
   * the row length. Rows ≤ 128 tokens are never cut by the default; 256 run 8 a batch, 512 two.
   */
  readonly maxBatchAttention?: number;
  /**
   * Tokenise the next chunk while this one runs through the graph (the tokenizer works on a
   * libuv thread). Same outputs either way. Default false.
   */
  readonly overlapTokenization?: boolean;
  /** Called after every batch with texts done so far and content tokens kept. */
  readonly onProgress?: (done: number, total: number, tokens: number) => void;
  /**
   * Encode texts longer than `window.size` tokens as overlapping windows (METHOD.md §8) instead
   * of truncating them: the tokenizer must not truncate. Mean pooling only.
   */
  readonly window?: WindowSpec;
  /**
   * A chunk is cut into parts of at most this many input tokens (whole texts), each yielded as
   * its own chunk. Default: windowed 131,072 (about 200 MB of 384-d float32 states); truncated
   * `chunkSize` × 128, which never cuts a pass at `maxLength` ≤ 128 and holds a pass at 256 or
   * 512 to the states of a chunk of 128-token texts.
   */
  readonly maxChunkTokens?: number;
}

/** A full batch of the truncated pass at `maxLength` 128: 32 rows × 128². */
export const DEFAULT_MAX_BATCH_ATTENTION = 32 * 128 * 128;

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
  const batching = batchLimits(options);
  const window = options.window;
  if (window !== undefined) {
    if (tokenizer.maxLength !== undefined)
      throw new Error('a windowed pass needs a tokenizer that does not truncate');
    if (spec.pooling !== 'mean')
      throw new Error(`windowed pooling is defined for mean pooling only, not ${spec.pooling}`);
  }
  const overlap = options.overlapTokenization ?? false;
  const tokenize = (start: number): Promise<TokenizedText[]> => {
    const pending = tokenizer.encode(texts.slice(start, start + chunkSize), options.prefix ?? '');
    // Handled here so a failure while the previous chunk runs is not an unhandled rejection;
    // it still surfaces where the promise is awaited.
    pending.catch(() => undefined);
    return pending;
  };
  const progress = { done: 0, tokens: 0, total: texts.length, onProgress: options.onProgress };
  let next: Promise<TokenizedText[]> | undefined;
  for (let start = 0; start < texts.length; start += chunkSize) {
    const tokenized = await (next ?? tokenize(start));
    next = overlap && start + chunkSize < texts.length ? tokenize(start + chunkSize) : undefined;
    // Whole texts, cut into parts of bounded size (bounded memory).
    const budget = options.maxChunkTokens ?? (window === undefined ? chunkSize * 128 : 131_072);
    let from = 0;
    while (from < tokenized.length) {
      let to = from;
      let held = 0;
      while (to < tokenized.length && (to === from || held + tokenized[to]!.ids.length <= budget))
        held += tokenized[to++]!.ids.length;
      const part = tokenized.slice(from, to);
      const rows = part.map((t) => (window === undefined ? wholeText(t) : splitWindows(t, window)));
      yield await encodeGroup(session, spec, start + from, part, rows, progress, batching);
      from = to;
    }
  }
}

function batchLimits(options: PassOptions) {
  return {
    maxBatchTokens: options.maxBatchTokens ?? 8192,
    maxBatchSize: options.maxBatchSize ?? 32,
    maxBatchAttention: options.maxBatchAttention ?? DEFAULT_MAX_BATCH_ATTENTION,
    windowed: options.window !== undefined,
  };
}

interface Progress {
  done: number;
  tokens: number;
  readonly total: number;
  readonly onProgress: PassOptions['onProgress'];
}

/**
 * Encodes one group of texts: every row (a whole text, or one window) bucketed by length
 * (longest first, ties in row order), run, then pooled and kept per text. A text of one row
 * is pooled and kept exactly as without windows; a windowed text sums the states of what each
 * window owns (see `WINDOW_POOLING`) and keeps each content token from its owning window.
 */
async function encodeGroup(
  session: EncoderSession,
  spec: PoolingSpec,
  start: number,
  tokenized: readonly TokenizedText[],
  windowed: readonly WindowedText[],
  progress: Progress,
  batching: ReturnType<typeof batchLimits>,
): Promise<EncodedChunk> {
  const count = tokenized.length;
  const rowText: number[] = [];
  const rowOf: WindowedText['rows'][number][] = [];
  for (let i = 0; i < count; i++) {
    for (const r of windowed[i]!.rows) {
      rowText.push(i);
      rowOf.push(r);
    }
  }
  const order = Array.from({ length: rowOf.length }, (_, i) => i).sort(
    (a, b) => rowOf[b]!.ids.length - rowOf[a]!.ids.length || a - b,
  );
  let dim = 0;
  const pooled: Float32Array[] = new Array<Float32Array>(count);
  const tokens: Float32Array[] = new Array<Float32Array>(count);
  const sums: Array<Float64Array | undefined> = new Array<Float64Array | undefined>(count);
  const pending = new Int32Array(count);
  for (let i = 0; i < count; i++) pending[i] = windowed[i]!.rows.length;
  let at = 0;
  while (at < order.length) {
    const longest = rowOf[order[at]!]!.ids.length;
    const size = Math.max(
      1,
      Math.min(
        batching.maxBatchSize,
        Math.floor(batching.maxBatchTokens / longest),
        Math.floor(batching.maxBatchAttention / (longest * longest)),
        order.length - at,
      ),
    );
    const rows = order.slice(at, at + size);
    const batch = await runBatch(
      session,
      rows.map((r) => rowOf[r]!),
      longest,
    );
    dim = batch.dim;
    for (let b = 0; b < rows.length; b++) {
      const text = rowText[rows[b]!]!;
      const row = rowOf[rows[b]!]!;
      const w = windowed[text]!;
      const base = b * longest * dim;
      if (w.rows.length === 1) {
        pooled[text] = poolRow(batch.states, base, row.ids.length, dim, spec);
        tokens[text] = contentRows(batch.states, base, row, dim);
        progress.tokens += tokens[text].length / dim;
        progress.done++;
        continue;
      }
      if (tokens[text] === undefined) {
        tokens[text] = new Float32Array(w.content * dim);
        sums[text] = new Float64Array(dim);
      }
      keepWindow(batch.states, base, w, row, dim, sums[text]!, tokens[text]);
      if (--pending[text]! === 0) {
        pooled[text] = meanOfSum(sums[text]!, w.head + w.content + w.tail, spec);
        sums[text] = undefined;
        progress.tokens += w.content;
        progress.done++;
      }
    }
    at += size;
    progress.onProgress?.(progress.done, progress.total, progress.tokens);
  }
  const chunk = assemble(start, tokenized, pooled, tokens, dim);
  if (!batching.windowed) return chunk;
  return { ...chunk, windows: Int32Array.from(windowed, (w) => w.rows.length) };
}

/**
 * Adds what one window owns to its text's float64 sum (leading tokens if first, trailing if
 * last, its content tokens), and writes its content tokens' unit states at their text index.
 */
function keepWindow(
  states: Float32Array,
  base: number,
  w: WindowedText,
  row: WindowedText['rows'][number],
  dim: number,
  sum: Float64Array,
  kept: Float32Array,
): void {
  const length = row.ids.length;
  if (row.ownsHead) for (let j = 0; j < w.head; j++) addInto(sum, states, base + j * dim);
  for (let i = row.ownFrom; i < row.ownTo; i++) {
    const off = base + (w.head + i - row.first) * dim;
    addInto(sum, states, off);
    kept.set(states.subarray(off, off + dim), i * dim);
    normalizeInto(kept, kept, i * dim, dim);
  }
  if (row.ownsTail)
    for (let j = length - w.tail; j < length; j++) addInto(sum, states, base + j * dim);
}

/** `sum += states[off, off + sum.length)`, in float64. */
function addInto(sum: Float64Array, states: Float32Array, off: number): void {
  const dim = sum.length;
  for (let k = 0; k < dim; k++) sum[k]! += states[off + k]!;
}

/** A windowed text's pooled vector from its float64 sum over `length` tokens. */
function meanOfSum(sum: Float64Array, length: number, spec: PoolingSpec): Float32Array {
  const dim = sum.length;
  const out = new Float32Array(dim);
  for (let k = 0; k < dim; k++) out[k] = sum[k]! / length;
  if (spec.normalize) normalizeInto(out, out, 0, dim);
  return out;
}

async function runBatch(
  session: EncoderSession,
  batch: ReadonlyArray<{ readonly ids: Int32Array }>,
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
  t: { readonly content: Uint8Array },
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
