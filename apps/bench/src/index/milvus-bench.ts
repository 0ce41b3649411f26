/**
 * `pnpm bench:big-bank --milvus`: Milvus Lite beside the exact and HNSW backends on the tiled
 * LoCoMo bank of the HNSW scale bench (`--hnsw-build` writes it under `--index`; read only
 * here). For each checkpoint in `--checkpoints` (default 1e5, 1e6 tokens), in one process:
 *
 * - **exact fp32** (onnxruntime, in RAM): p50/p90 of one query (all `rows` tokens, k 64);
 * - **bfe HNSW** (`HnswTokenIndex`, the saved usearch graph, ef `--ef-search`'s first value);
 * - **Milvus Lite FLAT / HNSW** (`MilvusTokenIndex`): a fresh `milvus-lite server` on 127.0.0.1
 *   with its data under `--milvus-data`, the first n tokens inserted as memories of 20 tokens in
 *   one bank (insert time, then the first search, which includes whatever Lite builds), then a
 *   warm-up pass and a measured pass; also the bare Milvus request (k + 16 per row, no
 *   rescoring) to separate the server's time from bfe's.
 *
 * `--milvus-reindex`: one server and one insert for all index types (the 1e6 insert alone is
 * ≈ 550 CPU-seconds); each later type replaces the index over the loaded rows, and its row's
 * `index s` is that replacement (Lite builds the index at load), its `insert s` the shared
 * insert. `--milvus-warmup N`: warm-up queries before the measured pass (default all).
 *
 * Recall@64 against `exact-<n>.json` of the scale bench (token sets). Lite is one Python
 * process over faiss: its times say nothing of a Milvus cluster's.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { OrtSimilarityKernel, exactTopK, flatBankSource, flatTokenStore } from '@bfe/index';
import {
  FIELDS,
  MilvusTokenIndex,
  TokenCollection,
  buildParams,
  parseMilvusOptions,
  waitForIndex,
  type MilvusSide,
} from '@bfe/index-milvus';
import { startMilvusLite, startMilvusServer } from '@bfe/index-milvus/testing';
import { median, quantile } from '../shared/stats.js';
import { note, printJson, printTable } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';
import { recallAt } from './measure.js';
import { hnswPhase, loadavg, readF32, readMeta } from './scale.js';

const K = 64;

interface Line {
  readonly what: string;
  readonly tokens: number;
  readonly p50: number;
  readonly p90: number;
  readonly recall: number;
  readonly insertS?: number;
  /** `--milvus-reindex`: replacing the index over the rows already inserted (Lite builds at load). */
  readonly indexS?: number;
  readonly firstSearchS?: number;
  readonly load: string;
}

const summary = (what: string, tokens: number, ms: number[], recall: number, extra = {}): Line => ({
  what,
  tokens,
  p50: median(ms),
  p90: quantile(ms, 0.9),
  recall,
  ...extra,
  load: loadavg(),
});

export async function runMilvusBench(o: BigBankOptions): Promise<void> {
  const dir = o.index;
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const { checkpoints } = o;
  const types = o.milvusIndex;
  const ef = o.efSearch[0]!;
  const dataRoot = o.milvusData;
  const q = readF32(join(dir, 'queries.f32'), meta.queries * rows * dim);
  const lines: Line[] = [];
  const log = (l: Line): void => {
    lines.push(l);
    note(JSON.stringify(l));
  };
  for (const n of checkpoints) {
    const ref = Int32Array.from(JSON.parse(readFileSync(join(dir, `exact-${n}.json`), 'utf8')));
    const x = readF32(join(dir, 'vectors.f32'), n * dim);
    log(await exactLine(x, q, n, meta.queries, rows, dim));
    const [h] = (await hnswPhase(dir, n, K, [ef], 2)) as Line[];
    log({ ...h!, what: `bfe hnsw ef ${ef}` });
    const memories = Math.ceil(n / meta.memoryTokens);
    const side: MilvusSide = {
      tokens: flatTokenStore(x, dim),
      tokenOffsets: Int32Array.from({ length: memories + 1 }, (_, m) =>
        Math.min(n, m * meta.memoryTokens),
      ),
      ids: Array.from({ length: memories }, (_, m) => `m${m}`),
      banks: Array.from({ length: memories }, () => 'tiled'),
    };
    const all = Int32Array.from({ length: memories }, (_, m) => m);
    // `--milvus-reindex`: one server and one insert for all index types; each later type
    // replaces the index (release, dropIndex, createIndex, load: Lite builds it at load).
    const reindex = o.milvusReindex === true;
    const warmup = Math.min(meta.queries, o.milvusWarmup ?? meta.queries);
    const hnsw = { M: meta.M, efConstruction: meta.efConstruction, ef };
    for (const on of o.milvusOn) {
      let lite: { address: string; token?: string | undefined; stop(): Promise<void> } | undefined;
      let c: TokenCollection | undefined;
      let insertS = Number.NaN;
      const data = (t: string): string => join(dataRoot, `${on}-${reindex ? 'reindex' : t}-${n}`);
      const stop = async (t: string): Promise<void> => {
        await c?.close();
        await lite?.stop();
        rmSync(data(t), { recursive: true, force: true });
        c = lite = undefined;
      };
      const start = async (dataDir: string) =>
        on === 'lite' ? startMilvusLite({ dataDir }) : startMilvusServer({ dataDir });
      try {
        for (const [t, indexType] of types.entries()) {
          const options = {
            indexType,
            hnsw,
            ivf: { nlist: o.milvusNlist, nprobe: o.milvusNprobe },
            timeoutMs: 3_600_000,
          };
          const at = () => ({
            address: lite!.address,
            ...(lite!.token ? { token: lite!.token } : {}),
          });
          let index: MilvusTokenIndex;
          const extra: Record<string, number> = {};
          if (!reindex || t === 0) {
            if (t > 0) await stop(types[t - 1]!);
            rmSync(data(indexType), { recursive: true, force: true });
            mkdirSync(data(indexType), { recursive: true });
            lite = await start(data(indexType));
            c = await TokenCollection.open({ ...options, ...at() }, dim);
            let t0 = performance.now();
            index = await MilvusTokenIndex.build(c, side);
            extra.insertS = insertS = (performance.now() - t0) / 1000;
            if (on === 'server') {
              t0 = performance.now();
              await waitForIndex(c);
              extra.indexS = (performance.now() - t0) / 1000;
            }
          } else {
            const t0 = performance.now();
            await replaceIndex(c!, { ...options, address: '-' });
            await c!.close();
            c = await TokenCollection.open({ ...options, ...at() }, dim);
            if (on === 'server') await waitForIndex(c);
            extra.indexS = (performance.now() - t0) / 1000;
            extra.insertS = insertS;
            index = new MilvusTokenIndex(c, side);
          }
          let t0 = performance.now();
          await index.search(q.subarray(0, rows * dim), rows, K, { memories: all });
          extra.firstSearchS = (performance.now() - t0) / 1000;
          const ms: number[] = [];
          const raw: number[] = [];
          let recall = 0;
          let widened = 0;
          for (let rep = -1; rep < 1; rep++) {
            for (let i = 0; i < (rep < 0 ? warmup : meta.queries); i++) {
              const qi = q.subarray(i * rows * dim, (i + 1) * rows * dim);
              t0 = performance.now();
              const hits = await index.search(qi, rows, K, { memories: all });
              if (rep < 0) continue;
              ms.push(performance.now() - t0);
              widened += hits.widenedRows;
              recall += recallAt(hits.tokens, ref.subarray(i * rows * K), rows, K) / meta.queries;
              t0 = performance.now();
              await c!.search(qi, rows, K + 16, `bank_id == "tiled"`);
              raw.push(performance.now() - t0);
            }
          }
          const param =
            indexType === 'HNSW'
              ? ` ef ${ef}`
              : indexType.startsWith('IVF')
                ? ` nprobe ${o.milvusNprobe}/${o.milvusNlist}`
                : '';
          const name = `milvus ${on} ${indexType}${param}`;
          log(summary(name, n, ms, recall, { ...extra, widenedRows: widened }));
          log(summary(`${name}: the bare request`, n, raw, Number.NaN));
        }
      } finally {
        await stop(types.at(-1)!);
      }
    }
  }
  const f = (x: number | undefined, d = 1): string =>
    x === undefined || Number.isNaN(x) ? '' : x.toFixed(d);
  printTable({
    head: [
      'search',
      'tokens',
      'p50 ms',
      'p90 ms',
      'recall@64',
      'insert s',
      'index s',
      '1st search s',
      'load',
    ],
    align: ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
    rows: lines.map((l) => [
      l.what,
      String(l.tokens),
      f(l.p50),
      f(l.p90),
      f(l.recall, 4),
      f(l.insertS),
      f(l.indexS),
      f(l.firstSearchS, 2),
      l.load,
    ]),
  });
  printJson(lines);
}

/** Drops the collection's vector index and creates `options.indexType`'s in its place. */
export async function replaceIndex(
  c: TokenCollection,
  options: Parameters<typeof parseMilvusOptions>[0],
): Promise<void> {
  const collection_name = c.name;
  const ok = (what: string, s: { error_code?: string | number; reason?: string }): void => {
    if (s.error_code !== undefined && s.error_code !== 'Success') {
      throw new Error(`Milvus ${what} failed: ${s.reason ?? String(s.error_code)}`);
    }
  };
  const o = parseMilvusOptions(options);
  ok('release', await c.client.releaseCollection({ collection_name }));
  ok('dropIndex', await c.client.dropIndex({ collection_name, field_name: FIELDS.vector }));
  ok(
    'createIndex',
    await c.client.createIndex({
      collection_name,
      field_name: FIELDS.vector,
      index_type: o.indexType,
      metric_type: 'IP',
      params: buildParams(o),
    }),
  );
}

/** The exact fp32 reference's latency (onnxruntime, in RAM), in this process. */
async function exactLine(
  x: Float32Array,
  q: Float32Array,
  n: number,
  queries: number,
  rows: number,
  dim: number,
): Promise<Line> {
  const kernel = new OrtSimilarityKernel();
  const ms: number[] = [];
  try {
    for (let rep = -1; rep < 1; rep++) {
      for (let i = 0; i < queries; i++) {
        const s = performance.now();
        const qi = q.subarray(i * rows * dim, (i + 1) * rows * dim);
        await exactTopK(kernel, qi, rows, flatBankSource(x, dim), { k: K });
        if (rep >= 0) ms.push(performance.now() - s);
      }
    }
  } finally {
    await kernel.dispose();
  }
  return summary('exact fp32 (onnxruntime)', n, ms, 1);
}
