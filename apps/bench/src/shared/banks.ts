/** Bank views and embedders built from one encoding, for the store's benchmarks. */
import type { BankView, Embedder, EncodedTexts } from '@bfe/store';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The rows `memoryRows` of one encoding as a bank's view, named `ids` (one per row). Rows may
 * repeat: a larger bank from real encoded vectors, each copy under its own id.
 */
export function sliceView(
  all: EncodedTexts,
  memoryRows: readonly number[],
  bank: string,
  ids: readonly string[],
  texts: readonly string[],
): BankView {
  const { dim } = all;
  const offsets = new Int32Array(memoryRows.length + 1);
  memoryRows.forEach((r, i) => {
    offsets[i + 1] = offsets[i]! + all.tokenOffsets[r + 1]! - all.tokenOffsets[r]!;
  });
  const tokens = offsets[memoryRows.length]!;
  const view = {
    bank,
    model: 'all-minilm-l6-v2',
    dim,
    ids,
    texts: memoryRows.map((r) => texts[r]!),
    metas: memoryRows.map(() => undefined),
    pooled: new Float32Array(memoryRows.length * dim),
    tokenOffsets: offsets,
    tokenVectors: new Float32Array(tokens * dim),
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
  };
  memoryRows.forEach((r, i) => {
    const from = all.tokenOffsets[r]!;
    const to = all.tokenOffsets[r + 1]!;
    view.pooled.set(all.pooled.subarray(r * dim, (r + 1) * dim), i * dim);
    view.tokenVectors.set(all.tokenVectors.subarray(from * dim, to * dim), offsets[i]! * dim);
    view.tokenIds.set(all.tokenIds.subarray(from, to), offsets[i]!);
    view.tokenPositions.set(all.tokenPositions.subarray(from, to), offsets[i]!);
  });
  return view;
}

/** An embedder that returns precomputed encodings by text: stores built without encoding. */
export function replayEmbedder(
  real: Embedder,
  texts: readonly string[],
  e: EncodedTexts,
): Embedder {
  const at = new Map(texts.map((t, i) => [t, i]));
  const { dim } = e;
  return {
    model: real.model,
    dim,
    tokenText: (id) => real.tokenText(id),
    dispose: () => Promise.resolve(),
    encode(batch) {
      return Promise.resolve(
        pickRows(
          e,
          batch.map((t) => at.get(t)!),
        ),
      );
    },
  };
}

/** Rows `rows` of `e` (repeats allowed) copied into one encoding, as one encoder call returns. */
export function pickRows(e: EncodedTexts, rows: readonly number[]): EncodedTexts {
  const { dim } = e;
  let tokens = 0;
  for (const r of rows) tokens += e.tokenOffsets[r + 1]! - e.tokenOffsets[r]!;
  const o: Mutable<EncodedTexts> = {
    count: rows.length,
    dim,
    pooled: new Float32Array(rows.length * dim),
    tokenOffsets: new Int32Array(rows.length + 1),
    tokenVectors: new Float32Array(tokens * dim),
    tokenIds: new Int32Array(tokens),
    tokenPositions: new Int32Array(tokens),
    truncated: new Uint8Array(rows.length),
  };
  let w = 0;
  rows.forEach((r, i) => {
    const a = e.tokenOffsets[r]!;
    const b = e.tokenOffsets[r + 1]!;
    o.pooled.set(e.pooled.subarray(r * dim, (r + 1) * dim), i * dim);
    o.tokenVectors.set(e.tokenVectors.subarray(a * dim, b * dim), w * dim);
    o.tokenIds.set(e.tokenIds.subarray(a, b), w);
    o.tokenPositions.set(e.tokenPositions.subarray(a, b), w);
    o.truncated[i] = e.truncated[r]!;
    w += b - a;
    o.tokenOffsets[i + 1] = w;
  });
  return o;
}
