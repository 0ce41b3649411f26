import type { TokenizedText } from '@bfe/encoder';

// The `chunked-pooled@N` systems' windows (the paper's Appendix D control). They live beside
// the chunks stage rather than in @bfe/encoder: the encode stage's cache key hashes every file
// of that package, and these windows change nothing the encode stage computes.

/**
 * One independent window of a memory: a complete encoder input of its own.
 */
export interface ChunkWindow {
  /** The window's input: the leading non-content tokens, its content slice, the trailing ones. */
  readonly ids: Int32Array;
  /** Content index (in the whole memory) of the window's first content token. */
  readonly first: number;
  /** Content tokens in the window. */
  readonly count: number;
}

/**
 * A memory's untruncated tokenisation cut into consecutive, non-overlapping windows of at most
 * `size` tokens, the unit of `model.window.size` and `maxLength`: the model's leading
 * non-content tokens (`[CLS]`, a passage prefix), up to `size − head − tail` content tokens,
 * the trailing ones (`[SEP]`). MiniLM at 128: `[CLS]` + 126 content tokens + `[SEP]`. Window
 * `w` holds content tokens `[w·c, min((w+1)·c, n))` with `c = size − head − tail`; only the
 * last may be shorter. A memory of at most `size` tokens is one window, its tokenisation
 * unchanged; `fits` says so.
 *
 * @throws {Error} when a window has no room for a content token, or a non-content token sits
 *   inside the content (no supported tokenizer lays a text out so).
 * @example
 * // ids [CLS a b c d e SEP], size 4 → [CLS a b SEP], [CLS c d SEP], [CLS e SEP]
 * cutChunks(t, 4).windows.map((w) => w.count); // [2, 2, 1]
 */
export function cutChunks(
  t: TokenizedText,
  size: number,
): { readonly fits: boolean; readonly content: number; readonly windows: ChunkWindow[] } {
  const length = t.ids.length;
  let head = 0;
  while (head < length && t.content[head] === 0) head++;
  let tail = 0;
  while (tail < length - head && t.content[length - 1 - tail] === 0) tail++;
  const n = length - head - tail;
  if (length <= size)
    return { fits: true, content: n, windows: [{ ids: t.ids, first: 0, count: n }] };
  for (let j = head; j < head + n; j++) {
    if (t.content[j] !== 1)
      throw new Error(`a non-content token at position ${j} inside the content: cannot cut it`);
  }
  const capacity = size - head - tail;
  if (capacity < 1) {
    throw new Error(
      `a window of ${size} tokens leaves no room for content beside ${head + tail} special/prefix tokens`,
    );
  }
  const windows: ChunkWindow[] = [];
  for (let first = 0; first < n; first += capacity) {
    const count = Math.min(capacity, n - first);
    const ids = new Int32Array(head + count + tail);
    ids.set(t.ids.subarray(0, head), 0);
    ids.set(t.ids.subarray(head + first, head + first + count), head);
    ids.set(t.ids.subarray(length - tail, length), head + count);
    windows.push({ ids, first, count });
  }
  return { fits: false, content: n, windows };
}
