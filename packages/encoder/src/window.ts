import type { TokenizedText } from './tokenizer.js';

/**
 * Windowed encoding of long memories (METHOD.md §8): a memory whose tokenised input is longer
 * than `size` is run as overlapping windows of at most `size` tokens (special tokens and any
 * passage prefix included, the same unit as `maxLength`), consecutive windows `stride` content
 * tokens apart; the last window ends at the memory's last content token.
 */
export interface WindowSpec {
  readonly size: number;
  readonly stride: number;
}

/**
 * What the pooled vector of a windowed memory is, word for word: recorded in the bank's
 * metadata (`bfe.window_pooling`) and `bank.json` (`window.pooling`).
 */
export const WINDOW_POOLING =
  'mean over every token of the untruncated input (leading specials and prefix, each content ' +
  'token once, trailing specials), each state taken from the window that owns it (leading ' +
  'tokens: the first window; trailing: the last; a content token: the window where it sits ' +
  'farthest from an edge, ties to the earlier), summed in float64, divided by the token count, ' +
  'then L2-normalised as the model normalises';

/** One encoder row of a windowed text: its input, and what it contributes. */
export interface WindowRow {
  readonly ids: Int32Array;
  /** 1 where the row's token is content (its own or another window's). */
  readonly content: Uint8Array;
  /** Content index (in the whole text) of the row's first content token. */
  readonly first: number;
  /** The content tokens this row owns: content indices `[ownFrom, ownTo)`. */
  readonly ownFrom: number;
  readonly ownTo: number;
  /** Whether the row's leading (trailing) non-content tokens are the text's pooled ones. */
  readonly ownsHead: boolean;
  readonly ownsTail: boolean;
}

/** A tokenised text split into windows, with the layout the pass needs to reassemble it. */
export interface WindowedText {
  /** Leading non-content tokens (specials, prefix) and trailing ones. */
  readonly head: number;
  readonly tail: number;
  /** Content tokens of the whole text. */
  readonly content: number;
  readonly rows: readonly WindowRow[];
}

/**
 * Window starts (content indices) over `n` content tokens, `capacity` per window, `stride`
 * apart, the last one moved back to end at `n` (so every window is full).
 * @example windowStarts(10, 4, 3) // [0, 3, 6] (the last is 10 - 4 = 6)
 */
export function windowStarts(n: number, capacity: number, stride: number): number[] {
  if (n <= capacity) return [0];
  const starts: number[] = [];
  for (let s = 0; s + capacity < n; s += stride) starts.push(s);
  starts.push(n - capacity);
  return starts;
}

/**
 * The window that owns each content token: the one where it sits farthest from an edge
 * (distance `min(i - start, start + capacity - 1 - i)`), ties to the earlier window.
 * Returns `[from, to)` per window; the ranges tile `0..n` in order.
 * @example windowOwnership([0, 3, 6], 4, 10) // [[0, 4], [4, 7], [7, 10]] (3 and 6 are ties)
 */
export function windowOwnership(
  starts: readonly number[],
  capacity: number,
  n: number,
): Array<[number, number]> {
  const owner = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    let best = -1;
    let bestDistance = -1;
    for (let w = 0; w < starts.length; w++) {
      const s = starts[w]!;
      if (i < s || i >= s + capacity) continue;
      const d = Math.min(i - s, s + capacity - 1 - i);
      if (d > bestDistance) {
        best = w;
        bestDistance = d;
      }
    }
    owner[i] = best;
  }
  const ranges: Array<[number, number]> = starts.map(() => [0, 0]);
  let at = 0;
  for (let w = 0; w < starts.length; w++) {
    const from = at;
    while (at < n && owner[at] === w) at++;
    ranges[w] = [from, at];
  }
  if (at !== n) throw new Error(`window ownership is not contiguous at content token ${at}`);
  return ranges;
}

/**
 * Splits one untruncated tokenisation into windows of `spec.size` tokens. A text that fits is
 * one row, its tokenisation unchanged (so it encodes exactly as without windows). Content must
 * be one run between the leading and trailing non-content tokens, as every supported tokenizer
 * lays it out.
 * @throws {Error} when `spec` leaves no room for `stride` content tokens in a window.
 */
export function splitWindows(t: TokenizedText, spec: WindowSpec): WindowedText {
  const length = t.ids.length;
  let head = 0;
  while (head < length && t.content[head] === 0) head++;
  let tail = 0;
  while (tail < length - head && t.content[length - 1 - tail] === 0) tail++;
  const n = length - head - tail;
  for (let j = head; j < head + n; j++) {
    if (t.content[j] !== 1)
      throw new Error(`a non-content token at position ${j} inside the content: cannot window it`);
  }
  const whole: WindowRow = {
    ids: t.ids,
    content: t.content,
    first: 0,
    ownFrom: 0,
    ownTo: n,
    ownsHead: true,
    ownsTail: true,
  };
  if (length <= spec.size) return { head, tail, content: n, rows: [whole] };
  const capacity = spec.size - head - tail;
  if (capacity < spec.stride || capacity < 1) {
    throw new Error(
      `a window of ${spec.size} tokens holds ${capacity} content tokens beside ${head + tail} special/prefix tokens: less than the stride ${spec.stride}`,
    );
  }
  const starts = windowStarts(n, capacity, spec.stride);
  const owned = windowOwnership(starts, capacity, n);
  const rows = starts.map((s, w): WindowRow => {
    const ids = new Int32Array(spec.size);
    ids.set(t.ids.subarray(0, head), 0);
    ids.set(t.ids.subarray(head + s, head + s + capacity), head);
    ids.set(t.ids.subarray(length - tail, length), head + capacity);
    const content = new Uint8Array(spec.size);
    content.fill(1, head, head + capacity);
    return {
      ids,
      content,
      first: s,
      ownFrom: owned[w]![0],
      ownTo: owned[w]![1],
      ownsHead: w === 0,
      ownsTail: w === starts.length - 1,
    };
  });
  return { head, tail, content: n, rows };
}

/** A text run as one row, whole (the pass without windows). */
export function wholeText(t: TokenizedText): WindowedText {
  return {
    head: 0,
    tail: 0,
    content: 0,
    rows: [
      {
        ids: t.ids,
        content: t.content,
        first: 0,
        ownFrom: 0,
        ownTo: 0,
        ownsHead: true,
        ownsTail: true,
      },
    ],
  };
}
