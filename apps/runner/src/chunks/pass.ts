import type { EncoderSession, PoolingSpec, TextTokenizer } from '@bfe/encoder';
import { cutChunks, type ChunkWindow } from './cut.js';

/**
 * What the chunk pass computed for the memories longer than one window (`cut`, in text order);
 * a memory of at most `size` tokens is left to the bank, whose pooled vector is its only window.
 */
export interface ChunkPassResult {
  readonly size: number;
  readonly dim: number;
  /** Every text's untruncated token count, specials and prefix included `[texts]`. */
  readonly lengths: Int32Array;
  /** Per window of a cut memory, in text then window order: the text's index `[windows]`. */
  readonly owner: Int32Array;
  /** Its first content token (content index in the memory) and content tokens `[windows]`. */
  readonly first: Int32Array;
  readonly count: Int32Array;
  /** Each window's native pooled vector `[windows * dim]`. */
  readonly vectors: Float32Array;
}

/** How the chunk pass batches and reports. */
export interface ChunkPassOptions {
  /** The model's passage prefix (e5: `passage: `), part of every window's leading tokens. */
  readonly prefix?: string;
  /** Texts tokenised at a time (bounds the held tokenisations). Default 2048. */
  readonly chunkSize?: number;
  /** Padded tokens per ONNX batch. Default 8192. */
  readonly maxBatchTokens?: number;
  /** Called after every batch with windows done and windows in all. */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * Cuts every text into independent windows of `size` tokens (`cutChunks`), runs each window
 * of a text longer than `size` through the frozen encoder as an input of its own, and pools it
 * as the model pools (`spec`: mean over every token of the window, specials included, in
 * float64 as the encoder's pass sums; or its CLS / last token), L2-normalised when the model
 * normalises. `tokenizer` must not truncate. Windows are batched by length (longest first).
 *
 * @example
 * const r = await encodeChunks(session, tokenizer, spec, ['a long memory …'], 32);
 * r.vectors.length === r.owner.length * r.dim; // one pooled 384-d vector per window (MiniLM)
 */
export async function encodeChunks(
  session: EncoderSession,
  tokenizer: TextTokenizer,
  spec: PoolingSpec,
  texts: readonly unknown[],
  size: number,
  options: ChunkPassOptions = {},
): Promise<ChunkPassResult> {
  if (tokenizer.maxLength !== undefined) {
    throw new Error('the chunk pass needs a tokenizer that does not truncate');
  }
  const chunkSize = options.chunkSize ?? 2048;
  const lengths = new Int32Array(texts.length);
  const windows: Array<{ text: number; w: ChunkWindow }> = [];
  for (let start = 0; start < texts.length; start += chunkSize) {
    const tokenized = await tokenizer.encode(
      texts.slice(start, start + chunkSize),
      options.prefix ?? '',
    );
    for (let i = 0; i < tokenized.length; i++) {
      const t = tokenized[i]!;
      lengths[start + i] = t.ids.length;
      const cut = cutChunks(t, size);
      if (!cut.fits) for (const w of cut.windows) windows.push({ text: start + i, w });
    }
  }
  const total = windows.length;
  const owner = Int32Array.from(windows, (x) => x.text);
  const first = Int32Array.from(windows, (x) => x.w.first);
  const count = Int32Array.from(windows, (x) => x.w.count);
  let dim = 0;
  let vectors = new Float32Array(0);
  const order = Array.from({ length: total }, (_, i) => i).sort(
    (a, b) => windows[b]!.w.ids.length - windows[a]!.w.ids.length || a - b,
  );
  const maxBatchTokens = options.maxBatchTokens ?? 8192;
  let at = 0;
  while (at < total) {
    const seq = windows[order[at]!]!.w.ids.length;
    const n = Math.max(1, Math.min(Math.floor(maxBatchTokens / seq), total - at));
    const rows = order.slice(at, at + n);
    const ids = new BigInt64Array(n * seq);
    const mask = new BigInt64Array(n * seq);
    for (let b = 0; b < n; b++) {
      const t = windows[rows[b]!]!.w.ids;
      for (let j = 0; j < t.length; j++) {
        ids[b * seq + j] = BigInt(t[j]!);
        mask[b * seq + j] = 1n;
      }
    }
    const batch = await session.run(ids, mask, n, seq);
    if (dim === 0) {
      dim = batch.dim;
      vectors = new Float32Array(total * dim);
    }
    for (let b = 0; b < n; b++) {
      const length = windows[rows[b]!]!.w.ids.length;
      poolInto(vectors, rows[b]! * dim, batch.states, b * seq * dim, length, dim, spec);
    }
    at += n;
    options.onProgress?.(at, total);
  }
  return { size, dim, lengths, owner, first, count, vectors };
}

/**
 * Native pooling of one input row of `length` real tokens (padding never included) into
 * `out[at, at + dim)`: the mean over every token in float64, or the CLS / last token's state;
 * then L2-normalised when `spec.normalize`.
 */
export function poolInto(
  out: Float32Array,
  at: number,
  states: Float32Array,
  base: number,
  length: number,
  dim: number,
  spec: PoolingSpec,
): void {
  if (spec.pooling === 'mean') {
    const acc = new Float64Array(dim);
    for (let j = 0; j < length; j++) {
      const off = base + j * dim;
      for (let k = 0; k < dim; k++) acc[k]! += states[off + k]!;
    }
    for (let k = 0; k < dim; k++) out[at + k] = acc[k]! / length;
  } else {
    const off = base + (spec.pooling === 'cls' ? 0 : length - 1) * dim;
    out.set(states.subarray(off, off + dim), at);
  }
  if (!spec.normalize) return;
  let ss = 0;
  for (let k = 0; k < dim; k++) ss += out[at + k]! * out[at + k]!;
  const inv = 1 / Math.max(Math.sqrt(ss), 1e-12);
  for (let k = 0; k < dim; k++) out[at + k] = out[at + k]! * inv;
}
