/**
 * One codec's store on one benchmark for `bench:store --parts codecs` (codec-quality.ts): built
 * from the replayed encodings, flushed (every search reads the codec's segments), checked,
 * searched with both systems at the experiment's settings, removed.
 */
import { rm } from 'node:fs/promises';
import type { SparseScorer } from '@bfe/scorer';
import { MemoryStore, storeIndexFactory, type Embedder, type StoreOptions } from '@bfe/store';
import type { CodecBenchmark } from './codec-banks.js';

/** The store's codecs, fp32 (the reference) first. */
export const CODECS = ['fp32', 'fp16', 'sq8', 'sq4'] as const satisfies readonly NonNullable<
  StoreOptions['codec']
>[];
export type Codec = (typeof CODECS)[number];

/** The systems measured: sparse fusion (the store's default) and sparse without fusion. */
export const CODEC_SYSTEMS = ['sparse-fusion', 'no-fusion'] as const;
export type CodecSystem = (typeof CODEC_SYSTEMS)[number];

/** The experiments' scorer settings (apps/runner's `scorer` section defaults, the table5 files). */
const TOKEN_K = 64;
const ALPHA = 0.5;
export const TOP = 10;

/** One codec's store on one benchmark. */
export interface CodecRun {
  readonly codec: Codec;
  /** Who encoded the queries: `replayed` (the encoded bank's rows), or a query model's name. */
  readonly queries: string;
  /** The resident banks' product (`storeIndexFactory`'s `residentProduct`). */
  readonly resident: ResidentProduct;
  readonly tokens: number;
  readonly memories: number;
  readonly segments: number;
  readonly segmentBytes: number;
  /** Largest |decoded − encoded| of a token state the searches read (0: bit for bit). */
  readonly maxDelta: number;
  readonly addSeconds: number;
  readonly searchSeconds: number;
  /** System → query id → its top 10, best first. */
  readonly runs: ReadonlyMap<CodecSystem, ReadonlyMap<string, readonly string[]>>;
}

const now = (): number => Number(process.hrtime.bigint()) / 1e9;

/** The resident banks' products measured (`bfe serve --resident-product`). */
export const RESIDENT_PRODUCTS = ['fp32', 'int8'] as const;
export type ResidentProduct = (typeof RESIDENT_PRODUCTS)[number];

/** A query model's encoder, run live on the queries while the passages stay replayed. */
export interface QueryEncoder {
  readonly name: string;
  readonly embedder: Embedder;
}

/**
 * Builds a store of `b` in `dir` with `codec`, searches every query with both systems and
 * removes the store. With `queries`, the store's queries are encoded by that model (passages
 * still the encoded bank's rows): the store `bfe serve --query-model` runs. `resident`: its
 * resident banks' product; with `int8`, each query is searched twice unmeasured and its bank's
 * resident kernel awaited right before its measured searches, so that every one runs on an int8
 * resident bank even where the views outgrow the store's cache (LongMemEval-S); an fp32 resident
 * bank ranks as the non-resident search (tested).
 * @throws Error when a bank still has memtable rows after the flush, or a view lacks a memory
 */
export async function runCodec(
  b: CodecBenchmark,
  codec: Codec,
  dir: string,
  scorer: SparseScorer,
  threads: number | undefined,
  queries?: QueryEncoder,
  resident: ResidentProduct = 'fp32',
): Promise<CodecRun> {
  const t0 = now();
  const replay = b.embedder;
  const embedder: Embedder =
    queries === undefined
      ? replay
      : {
          ...replay,
          encode: (texts, role, options) =>
            role === 'query'
              ? queries.embedder.encode(texts, role, options)
              : replay.encode(texts, role, options),
        };
  const index = storeIndexFactory({
    residentProduct: resident,
    ...(threads === undefined ? {} : { threads }),
  });
  const store = await MemoryStore.open(dir, {
    embedder,
    scorer,
    codec,
    compactSegments: 0,
    flushBytes: 2 ** 40,
    maxTextBytes: 2 ** 26,
    ...(threads === undefined ? {} : { threads }),
    index,
  });
  try {
    for (const [bank, ids] of b.banks) {
      for (let i = 0; i < ids.length; i += 256)
        await store.add(ids.slice(i, i + 256).map((id) => ({ id, bank, text: b.texts.get(id)! })));
      await store.flush(); // one segment per bank, in the codec
    }
    const addSeconds = now() - t0;
    const stats = await store.stats();
    if (stats.codec !== codec) throw new Error(`the store keeps ${stats.codec}, not ${codec}`);
    for (const [bank, s] of Object.entries(stats.banks))
      if (s.memtableRows !== 0 || s.segments === 0)
        throw new Error(`bank ${bank}: ${s.memtableRows} memtable rows after flush`);
    const maxDelta = decodedDelta(store, b);
    let warming = 0;
    const t1 = now();
    const runs = new Map<CodecSystem, Map<string, string[]>>(
      CODEC_SYSTEMS.map((s) => [s, new Map()]),
    );
    for (const q of b.queries) {
      if (resident !== 'fp32') {
        const w0 = now();
        for (let i = 0; i < 2; i++) await store.search({ bank: q.bank, query: q.text, k: TOP });
        await index.settled();
        warming += now() - w0;
      }
      for (const system of CODEC_SYSTEMS) {
        const got = await store.search({
          bank: q.bank,
          query: q.text,
          k: TOP,
          system,
          tokenK: TOKEN_K,
          alpha: ALPHA,
          explain: false,
        });
        runs.get(system)!.set(
          q.id,
          got.map((r) => r.id),
        );
      }
    }
    return {
      codec,
      queries: queries?.name ?? 'replayed',
      resident,
      tokens: stats.tokens,
      memories: stats.memories,
      segments: stats.segments,
      segmentBytes: Object.values(stats.banks).reduce((a, s) => a + s.segmentBytes, 0),
      maxDelta,
      addSeconds,
      searchSeconds: now() - t1 - warming,
      runs,
    };
  } finally {
    await store.close({ flush: false });
    await rm(dir, { recursive: true, force: true });
  }
}

/** Largest |Δ| between the token states a snapshot's views hold and the encoded ones. */
function decodedDelta(store: MemoryStore, b: CodecBenchmark): number {
  const snap = store.snapshot();
  let max = 0;
  try {
    for (const [bank, ids] of b.banks) {
      const view = snap.bank(bank);
      if (view.ids.length !== ids.length) throw new Error(`bank ${bank}: ${view.ids.length} rows`);
      const { tokenOffsets, tokenVectors, dim } = view;
      for (let i = 0; i < view.ids.length; i++) {
        const want = b.tokensOf(view.ids[i]!);
        const at = tokenOffsets[i]! * dim;
        if ((tokenOffsets[i + 1]! - tokenOffsets[i]!) * dim !== want.length)
          throw new Error(`bank ${bank}, memory ${view.ids[i]}: token count differs`);
        for (let j = 0; j < want.length; j++) {
          const d = Math.abs(tokenVectors[at + j]! - want[j]!);
          if (d > max) max = d;
        }
      }
    }
  } finally {
    void snap.release();
  }
  return max;
}
