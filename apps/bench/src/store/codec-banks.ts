/**
 * The inputs of `bench:store --parts codecs` (codec-quality.ts): a benchmark as the experiment
 * scores it — its queries, each with its own bank of memories (a LoCoMo conversation, a
 * LongMemEval-S question's haystack), the labels used only for scoring — and `bfe encode`'s
 * encoded bank of it, replayed under a store by an embedder that returns the encoded rows of
 * the texts it is asked for (so the store holds the experiment's vectors bit for bit).
 */
import { openBank, type BankSide } from '@bfe/encoder';
import type { Benchmark, Query, RelevanceLabels } from '@bfe/core';
import type { Embedder, EncodedTexts } from '@bfe/store';
import { pickRows } from '../shared/banks.js';

/** One query as the bench searches and scores it. */
export interface CodecQuery {
  readonly id: string;
  readonly text: string;
  /** The store bank it is searched in. */
  readonly bank: string;
  readonly subtask: string;
}

/** A benchmark cut into store banks, with the encoded vectors replayed by `embedder`. */
export interface CodecBenchmark {
  readonly name: string;
  /** Bank → its memory ids, in the order they are added. */
  readonly banks: ReadonlyMap<string, readonly string[]>;
  /** Memory id → text. */
  readonly texts: ReadonlyMap<string, string>;
  /** The evaluated queries, in the runner's order (subtask as declared, then id). */
  readonly queries: readonly CodecQuery[];
  readonly subtasks: readonly string[];
  readonly labels: RelevanceLabels;
  /** Returns the encoded bank's rows for the texts asked (passages and queries apart). */
  readonly embedder: Embedder;
  /** Memory id → its fp32 token vectors as encoded (a view into the bank). */
  readonly tokensOf: (id: string) => Float32Array;
  readonly dim: number;
  /** The model that encoded the bank: its registry name and graph's SHA-256. */
  readonly model: { readonly name: string; readonly sha256: string };
  /** Texts two memories (or two queries) share; their encoded rows compared bit for bit. */
  readonly duplicateTexts: number;
}

/**
 * The runner's query order (`orderedQueries` in apps/runner's score pipeline): subtask in the
 * benchmark's declared order, then id. Evaluations sum in this order, so figures match bit for
 * bit.
 */
export function runnerOrder(benchmark: Benchmark, queries: readonly Query[]): Query[] {
  const order = new Map(benchmark.subtasks.map((s, i) => [s, i]));
  return queries
    .slice()
    .sort(
      (a, b) =>
        (order.get(a.category) ?? 0) - (order.get(b.category) ?? 0) ||
        (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
}

/**
 * Opens the encoded bank `dir` of `benchmark` and cuts it into store banks: a query with
 * `candidateBankIds` (LoCoMo) is searched in its conversation's bank, named as the
 * conversation; a query with `candidateIds` (LongMemEval-S) in a bank of its own, named by the
 * query id, holding exactly its candidates. `keep` picks the queries (a predeclared subset);
 * only banks of kept queries are built. `keep` sees each query with its index in the runner's order.
 */
export async function codecBenchmark(
  name: string,
  benchmark: Benchmark,
  labels: RelevanceLabels,
  dir: string,
  keep: (q: Query, i: number) => boolean = () => true,
): Promise<CodecBenchmark> {
  const bank = await openBank(dir, { verifyHashes: false });
  const { memories, queries: querySide, dim } = bank;
  const memoryRow = new Map(memories.ids.map((id, r) => [id, r]));
  const queryRow = new Map(querySide.ids.map((id, r) => [id, r]));
  const texts = new Map(benchmark.memories.map((m) => [m.id, m.text]));
  const byConversation = new Map<string, string[]>();
  for (const m of benchmark.memories) {
    if (m.bankId === undefined) continue;
    const list = byConversation.get(m.bankId) ?? [];
    list.push(m.id);
    byConversation.set(m.bankId, list);
  }
  const banks = new Map<string, readonly string[]>();
  const queries: CodecQuery[] = [];
  runnerOrder(benchmark, benchmark.queries)
    .filter(keep)
    .forEach((q) => {
      const own = q.candidateBankIds;
      if (own !== undefined && own.length !== 1)
        throw new Error(
          `query ${q.id}: ${own.length} candidate banks (one store bank each expected)`,
        );
      const bankName = own?.[0] ?? q.id;
      const ids = own === undefined ? q.candidateIds! : byConversation.get(bankName);
      if (ids === undefined) throw new Error(`query ${q.id}: bank ${bankName} has no memories`);
      banks.set(bankName, ids);
      queries.push({ id: q.id, text: q.text, bank: bankName, subtask: q.category });
    });
  const passageRow = new Map<string, number>();
  const queryTextRow = new Map<string, number>();
  let duplicateTexts = 0;
  const index = (map: Map<string, number>, side: BankSide, text: string, row: number) => {
    const seen = map.get(text);
    if (seen === undefined) return void map.set(text, row);
    duplicateTexts += 1;
    if (!sameRows(side, dim, seen, row))
      throw new Error(`two rows of the text '${text.slice(0, 60)}' were encoded differently`);
  };
  for (const ids of banks.values())
    for (const id of ids) {
      const r = memoryRow.get(id);
      if (r === undefined) throw new Error(`memory ${id} is not in the encoded bank ${dir}`);
      if (passageRow.get(texts.get(id)!) !== r) index(passageRow, memories, texts.get(id)!, r);
    }
  for (const q of queries) {
    const r = queryRow.get(q.id);
    if (r === undefined) throw new Error(`query ${q.id} is not in the encoded bank ${dir}`);
    index(queryTextRow, querySide, q.text, r);
  }
  const queryEncoded = encodedOf(querySide, dim);
  const memoryEncoded = encodedOf(memories, dim);
  const embedder: Embedder = {
    model: bank.manifest.model.sha256,
    dim,
    tokenText: (id) => String(id),
    dispose: () => Promise.resolve(),
    encode: (batch, role) =>
      Promise.resolve(
        pickRows(
          role === 'query' ? queryEncoded : memoryEncoded,
          batch.map((t) => (role === 'query' ? queryTextRow : passageRow).get(t)!),
        ),
      ),
  };
  const tokensOf = (id: string): Float32Array => {
    const r = memoryRow.get(id)!;
    const o = memories.tokenOffsets;
    return memories.tokenVectors.subarray(o[r]! * dim, o[r + 1]! * dim);
  };
  const { subtasks } = benchmark;
  const model = { name: bank.manifest.model.name, sha256: bank.manifest.model.sha256 };
  return {
    name,
    banks,
    texts,
    queries,
    subtasks,
    labels,
    embedder,
    tokensOf,
    dim,
    model,
    duplicateTexts,
  };
}

/** Whether rows `a` and `b` of a side hold the same tokens and vectors, bit for bit. */
function sameRows(side: BankSide, dim: number, a: number, b: number): boolean {
  const o = side.tokenOffsets;
  if (o[a + 1]! - o[a]! !== o[b + 1]! - o[b]!) return false;
  const bitsOf = (v: Float32Array) => new Uint32Array(v.buffer, v.byteOffset, v.length);
  const [bits, pooled] = [bitsOf(side.tokenVectors), bitsOf(side.pooled)];
  for (let i = 0; i < dim; i++) if (pooled[a * dim + i] !== pooled[b * dim + i]) return false;
  const n = (o[a + 1]! - o[a]!) * dim;
  for (let i = 0; i < n; i++) if (bits[o[a]! * dim + i] !== bits[o[b]! * dim + i]) return false;
  return true;
}

/** A side's encoding under the store's field names (its rows' `truncated` read as 0). */
function encodedOf(side: BankSide, dim: number): EncodedTexts {
  const count = side.tokenOffsets.length - 1;
  return {
    count,
    dim,
    pooled: side.pooled,
    tokenOffsets: side.tokenOffsets,
    tokenVectors: side.tokenVectors,
    tokenIds: side.tokenId,
    tokenPositions: side.tokenPosition,
    truncated: new Uint8Array(count),
  };
}
