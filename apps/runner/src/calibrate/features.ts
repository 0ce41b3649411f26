import type { LoadedDataset } from '@bfe/core';
import type { OpenedBank } from '@bfe/encoder';
import type { SparseScorer } from '@bfe/scorer';
import { searchView, type BankView, type EncodedTexts } from '@bfe/store';

/** One query's candidates as the store scores them (`searchView`), with their labels. */
export interface QueryScores {
  readonly id: string;
  readonly category: string | undefined;
  /** Per candidate, in rank order: the pooled cosine, tail-floor `s_sparse`, fused score. */
  readonly pooled: number[];
  readonly sparse: number[];
  readonly fused: number[];
  /** 1 where the candidate is labelled relevant. */
  readonly relevant: number[];
}

/**
 * Scores every query of a loaded dataset over its own candidates through the store's own
 * search (`searchView`: sparse fusion, token k 64, α 0.5, every candidate returned), on the
 * vectors of an encoded bank, so the features a calibration is fitted on are exactly the ones
 * a store's search computes. Labels are read only after the search, to mark each result.
 *
 * @example
 * const scores = await scoreQueries(dataset, bank, scorer, { model: bank.manifest.model.sha256 });
 * scores[0].pooled.length; // the query's candidates (≈ 50 sessions on LongMemEval-S)
 */
export async function scoreQueries(
  dataset: LoadedDataset,
  bank: OpenedBank,
  scorer: SparseScorer,
  options: { readonly model: string; readonly tokenK: number; readonly alpha: number },
  progress: (done: number, total: number) => void = () => {},
): Promise<QueryScores[]> {
  const { benchmark, labels } = dataset;
  const { dim, memories, queries } = bank;
  const memoryRow = new Map(memories.ids.map((id, i) => [id, i]));
  const queryRow = new Map(queries.ids.map((id, i) => [id, i]));
  const text = new Map(benchmark.memories.map((m) => [m.id, m.text]));
  const out: QueryScores[] = [];
  for (const query of benchmark.queries) {
    // No candidate list: every memory is a candidate (METHOD.md §6).
    const candidates = query.candidateIds ?? benchmark.memories.map((m) => m.id);
    const rows = candidates.map((id) => {
      const row = memoryRow.get(id);
      if (row === undefined) throw new Error(`scoreQueries: memory ${id} is not in the bank`);
      return row;
    });
    const view = candidateView(
      bank,
      rows,
      options.model,
      (row) => text.get(memories.ids[row]!) ?? '',
    );
    const q = queryRow.get(query.id);
    if (q === undefined) throw new Error(`scoreQueries: query ${query.id} is not in the bank`);
    const results = await searchView(
      view,
      queryTexts(bank, q, dim),
      { k: rows.length, explain: false, tokenK: options.tokenK, alpha: options.alpha },
      scorer,
    );
    const relevant = labels.relevant(query.id);
    out.push({
      id: query.id,
      category: query.category,
      pooled: results.map((r) => r.pooled),
      sparse: results.map((r) => r.sparse),
      fused: results.map((r) => r.score),
      relevant: results.map((r) => (relevant.has(r.id) ? 1 : 0)),
    });
    progress(out.length, benchmark.queries.length);
  }
  return out;
}

/** A {@link BankView} of some memory rows of an encoded bank (copies: small). */
function candidateView(
  bank: OpenedBank,
  rows: readonly number[],
  model: string,
  textOf: (row: number) => string,
): BankView {
  const { dim, memories } = bank;
  const offsets = memories.tokenOffsets;
  let tokens = 0;
  for (const r of rows) tokens += offsets[r + 1]! - offsets[r]!;
  const pooled = new Float32Array(rows.length * dim);
  const tokenOffsets = new Int32Array(rows.length + 1);
  const tokenVectors = new Float32Array(tokens * dim);
  const tokenIds = new Int32Array(tokens);
  const tokenPositions = new Int32Array(tokens);
  let t = 0;
  rows.forEach((r, i) => {
    pooled.set(memories.pooled.subarray(r * dim, (r + 1) * dim), i * dim);
    const a = offsets[r]!;
    const b = offsets[r + 1]!;
    tokenVectors.set(memories.tokenVectors.subarray(a * dim, b * dim), t * dim);
    tokenIds.set(memories.tokenId.subarray(a, b), t);
    tokenPositions.set(memories.tokenPosition.subarray(a, b), t);
    t += b - a;
    tokenOffsets[i + 1] = t;
  });
  return {
    bank: 'calibration',
    model,
    dim,
    ids: rows.map((r) => memories.ids[r]!),
    texts: rows.map(textOf),
    metas: rows.map(() => undefined),
    pooled,
    tokenOffsets,
    tokenVectors,
    tokenIds,
    tokenPositions,
  };
}

/** One query of an encoded bank as the store's {@link EncodedTexts}. */
function queryTexts(bank: OpenedBank, row: number, dim: number): EncodedTexts {
  const { queries } = bank;
  const a = queries.tokenOffsets[row]!;
  const b = queries.tokenOffsets[row + 1]!;
  return {
    count: 1,
    dim,
    pooled: queries.pooled.slice(row * dim, (row + 1) * dim),
    tokenOffsets: Int32Array.from([0, b - a]),
    tokenVectors: queries.tokenVectors.slice(a * dim, b * dim),
    tokenIds: queries.tokenId.slice(a, b),
    tokenPositions: queries.tokenPosition.slice(a, b),
    truncated: new Uint8Array(1),
  };
}
