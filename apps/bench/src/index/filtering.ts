import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { HnswTokenIndex, trainCodec } from '@bfe/index';
import type { HnswParams } from '@bfe/index';
import { median, quantile } from '../shared/stats.js';
import { exactTopK, recallAt } from './measure.js';
import { loadavg } from './scale.js';

/** One strategy at one shape, measured through `HnswTokenIndex` (what bfe runs). */
export interface ShapeResult {
  readonly shape: string;
  readonly banks: number;
  readonly tokensPerBank: number;
  readonly strategy: 'per-bank' | 'filtered';
  /** Build seconds for all banks; `extrapolated` when measured on `builtBanks` only. */
  readonly buildS: number;
  readonly indexBytes: number;
  readonly extrapolated: boolean;
  readonly builtBanks: number;
  readonly recall: number;
  readonly p50: number;
  readonly p90: number;
  readonly queries: number;
  readonly widenedRows: number;
  readonly load: string;
}

/** A bank laid out for `HnswTokenIndex`: fp32 codes, memories, each memory's bank. */
export interface ShapeBank {
  readonly vectors: Float32Array;
  readonly n: number;
  readonly dim: number;
  /** `[memories + 1]` token offsets of the memories, in token order. */
  readonly tokenOffsets: Int32Array;
  /** `[memories]` the bank of each memory. */
  readonly memoryBank: Int32Array;
  /** One query: its rows and its own bank. */
  readonly queries: readonly { tokens: Float32Array; rows: number; bank: number }[];
}

const dirBytes = (dir: string): number =>
  readdirSync(dir).reduce((s, f) => s + statSync(join(dir, f)).size, 0);

function bankMemories(b: ShapeBank, bank: number): Int32Array {
  const out: number[] = [];
  b.memoryBank.forEach((x, m) => x === bank && out.push(m));
  return Int32Array.from(out);
}

function tokensOf(b: ShapeBank, memories: Int32Array): Int32Array {
  const out: number[] = [];
  for (const m of memories)
    for (let t = b.tokenOffsets[m]!; t < b.tokenOffsets[m + 1]!; t++) out.push(t);
  return Int32Array.from(out);
}

/** Runs every query of `b` once (warm-up) then timed; recall@k vs exact within its own bank. */
async function timeQueries(
  b: ShapeBank,
  k: number,
  search: (q: ShapeBank['queries'][number]) => Promise<{ tokens: Int32Array; widenedRows: number }>,
  toBank: (q: ShapeBank['queries'][number], tokens: Int32Array) => Int32Array,
): Promise<{ recall: number; latencies: number[]; widened: number }> {
  const latencies: number[] = [];
  let recall = 0;
  let widened = 0;
  for (const q of b.queries) await search(q);
  for (const q of b.queries) {
    const s = performance.now();
    const hits = await search(q);
    latencies.push(performance.now() - s);
    widened += hits.widenedRows;
    const members = tokensOf(b, bankMemories(b, q.bank));
    const want = exactTopK(b.vectors, b.dim, members, q.tokens, q.rows, k);
    recall += recallAt(toBank(q, hits.tokens), want, q.rows, k) / b.queries.length;
  }
  return { recall, latencies, widened };
}

/**
 * Per-bank graphs vs one filtered graph, both through `HnswTokenIndex` (fp32 codes, threads as
 * given). Per-bank: the index with `memoryBank` (what it picks when the candidates are whole
 * banks); built for every bank, or — `sampleBanks` — only for the queries' banks, one
 * single-bank index each, the build time and bytes scaled by banks / built (marked
 * `extrapolated`). Filtered: the index without `memoryBank` — one graph over every token, the
 * candidates' memories as a filter — built here or loaded from `globalDir` (`all.usearch`).
 */
export async function filterShape(
  shape: string,
  b: ShapeBank,
  params: HnswParams,
  k: number,
  o: { threads: number; work: string; sampleBanks: boolean; globalDir?: string },
): Promise<ShapeResult[]> {
  const model = trainCodec('fp32', b.vectors, 1, b.dim);
  const codes = new Uint8Array(b.vectors.buffer, b.vectors.byteOffset, b.n * b.dim * 4);
  const banks = new Set(b.memoryBank).size;
  const base = { shape, banks, tokensPerBank: Math.round(b.n / banks), queries: b.queries.length };
  const out: ShapeResult[] = [];
  const stats = (
    t: Awaited<ReturnType<typeof timeQueries>>,
  ): Pick<ShapeResult, 'recall' | 'p50' | 'p90' | 'widenedRows' | 'load'> => ({
    recall: t.recall,
    p50: median(t.latencies),
    p90: quantile(t.latencies, 0.9),
    widenedRows: t.widened,
    load: loadavg(),
  });
  // Per-bank.
  if (!o.sampleBanks) {
    const t0 = performance.now();
    const index = await HnswTokenIndex.build(
      { model, codes, tokenOffsets: b.tokenOffsets, memoryBank: b.memoryBank },
      params,
      { threads: o.threads, buildThreads: o.threads },
    );
    const buildS = (performance.now() - t0) / 1000;
    const dir = join(o.work, `${shape}-per-bank`);
    await index.save(dir);
    const t = await timeQueries(
      b,
      k,
      (q) => index.search(q.tokens, q.rows, k, { memories: bankMemories(b, q.bank) }),
      (_, tokens) => tokens,
    );
    index.dispose();
    out.push({
      ...base,
      strategy: 'per-bank',
      buildS,
      indexBytes: dirBytes(dir),
      extrapolated: false,
      builtBanks: banks,
      ...stats(t),
    });
  } else {
    const sampled = [...new Set(b.queries.map((q) => q.bank))];
    const parts = new Map<
      number,
      { index: HnswTokenIndex; tokens: Int32Array; memories: Int32Array }
    >();
    let buildS = 0;
    let bytes = 0;
    for (const bank of sampled) {
      const memories = bankMemories(b, bank);
      const tokens = tokensOf(b, memories);
      const local = new Float32Array(tokens.length * b.dim);
      tokens.forEach((t, j) =>
        local.set(b.vectors.subarray(t * b.dim, (t + 1) * b.dim), j * b.dim),
      );
      const offsets = Int32Array.from({ length: memories.length + 1 }, (_, i) =>
        i === memories.length
          ? tokens.length
          : b.tokenOffsets[memories[i]!]! - b.tokenOffsets[memories[0]!]!,
      );
      const t0 = performance.now();
      const index = await HnswTokenIndex.build(
        { model, codes: new Uint8Array(local.buffer), tokenOffsets: offsets },
        params,
        { threads: o.threads, buildThreads: o.threads },
      );
      buildS += (performance.now() - t0) / 1000;
      const dir = join(o.work, `${shape}-bank-${bank}`);
      await index.save(dir);
      bytes += dirBytes(dir);
      rmSync(dir, { recursive: true, force: true });
      parts.set(bank, { index, tokens, memories: Int32Array.from(memories, (_, i) => i) });
    }
    const t = await timeQueries(
      b,
      k,
      (q) => {
        const p = parts.get(q.bank)!;
        return p.index.search(q.tokens, q.rows, k, { memories: p.memories });
      },
      (q, tokens) => tokens.map((t) => parts.get(q.bank)!.tokens[t]!),
    );
    for (const p of parts.values()) p.index.dispose();
    const scale = banks / sampled.length;
    out.push({
      ...base,
      strategy: 'per-bank',
      buildS: buildS * scale,
      indexBytes: bytes * scale,
      extrapolated: true,
      builtBanks: sampled.length,
      ...stats(t),
    });
  }
  // Filtered.
  const side = { model, codes, tokenOffsets: b.tokenOffsets };
  const t0 = performance.now();
  const global =
    o.globalDir === undefined
      ? await HnswTokenIndex.build(side, params, { threads: o.threads, buildThreads: o.threads })
      : await HnswTokenIndex.load(o.globalDir, side, params, { threads: o.threads });
  const buildS = (performance.now() - t0) / 1000;
  let indexBytes: number;
  if (o.globalDir === undefined) {
    const dir = join(o.work, `${shape}-global`);
    await global.save(dir);
    indexBytes = dirBytes(dir);
  } else indexBytes = dirBytes(o.globalDir);
  const t = await timeQueries(
    b,
    k,
    (q) => global.search(q.tokens, q.rows, k, { memories: bankMemories(b, q.bank) }),
    (_, tokens) => tokens,
  );
  global.dispose();
  out.push({
    ...base,
    strategy: 'filtered',
    buildS,
    indexBytes,
    extrapolated: false,
    builtBanks: banks,
    ...stats(t),
  });
  return out;
}
