/**
 * `pnpm bench:big-bank --ivf-large`: the clustered residual backend on a bank that is never held
 * whole — the segmented bench's source (`token-source.ts`: LoCoMo's states tiled with noise
 * `--noise`, or `--real` banks) at `--tokens` (2e7: 30.7 GB of float32) — in three phases, each
 * in its own process (its own peak RSS), each skipped when its files are in `--dir` already:
 *
 * 1. **source**: the tokens generated chunk by chunk (65,536) and never stored as float32: each
 *    chunk encoded to sq8 (`codes.sq8`, trained on the first chunk: the rescoring codes, 384
 *    B/token) and searched exactly for every query row at once (the kernel's top-(64 + 16) of
 *    the chunk, rescored in float64 from the chunk, merged): the exact fp32 top-64 of each row
 *    (`truth.i32`), the streamed pass timed;
 * 2. **build** per (centroids, residual bits): `IvfTokenIndex.buildFile` over the sq8 codes read
 *    by position (k-means on the seeded sample, every token assigned and coded) into
 *    `ivf-<centroids>-<bits>.bin`, the build's seconds and peak RSS;
 * 3. **search**: the file opened `resident` (codes read straight into the scan's memory), one
 *    query = `--rows` real query rows, k = 64, every memory (128 tokens each) a candidate, per
 *    nprobe × over-fetch × scan threads, `--ivf-reps` passes over the queries: p50 / p90 over
 *    every pass and p50 over the first (a query's sq8 rows met for the first time), token
 *    recall@64 against the exact top-64 of phase 1, the proposals rescored from the sq8 codes by
 *    position (as the segmented HNSW search rescored; reads counted); the search process's peak
 *    RSS and the bytes on disk.
 *
 *   pnpm bench:big-bank --ivf-large --bank <LoCoMo bank> --tokens 20000000 --centroids 4096 \
 *     --residual-bits 4 --nprobe 4,8,16 --over-fetch 2 --ivf-threads 1,2 --queries 20 --rows 32 \
 *     --dir <dir with 40 GB free>
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { IvfTokenIndex, OrtSimilarityKernel, encodeTokens, flatTokenStore } from '@bfe/index';
import { peakRssMb } from '../shared/machine.js';
import { note, out, printJson, printTable } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';
import { runPhase } from './phase.js';
import { CHUNK, K, MARGIN, codecOf, folderOf, indexName, sideOf } from './ivf-large-files.js';
import { searchPhase, type SearchResult } from './ivf-large-search.js';

/** Per row: the best `K` (float64 value descending, token ascending) of the kept and the new. */
function mergeRow(
  keep: { values: Float64Array; tokens: Int32Array },
  r: number,
  values: ArrayLike<number>,
  tokens: ArrayLike<number>,
): void {
  const all: [number, number][] = [];
  for (let i = 0; i < K; i++) {
    if (keep.tokens[r * K + i]! >= 0) all.push([keep.values[r * K + i]!, keep.tokens[r * K + i]!]);
  }
  for (let i = 0; i < values.length; i++) all.push([values[i]!, tokens[i]!]);
  all.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let i = 0; i < K && i < all.length; i++) {
    keep.values[r * K + i] = all[i]![0];
    keep.tokens[r * K + i] = all[i]![1];
  }
}

/** What phase 1 records (`source.json`). */
interface SourceMeta {
  readonly tokens: number;
  readonly dim: number;
  readonly describe: string;
  readonly queryRows: number;
  readonly seconds: number;
  readonly exactSeconds: number;
  readonly codeBytes: number;
  readonly peakRssMb: number;
}

/** Phase 1: sq8 codes and the exact top-64 of every query row, one streamed pass. */
async function sourcePhase(o: BigBankOptions): Promise<SourceMeta> {
  const dir = folderOf(o);
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  const { model, first, source } = await codecOf(o);
  const n = o.tokens;
  if (n > source.tokens) throw new Error(`--tokens ${n}: the source holds ${source.tokens}`);
  const dim = source.dim;
  const rows = o.queries * o.rows;
  const q = source.queries;
  const kernel = new OrtSimilarityKernel();
  const best = { values: new Float64Array(rows * K), tokens: new Int32Array(rows * K).fill(-1) };
  const codesFd = openSync(join(dir, 'codes.sq8.part'), 'w');
  let exactSeconds = 0;
  let x = first;
  const cand = new Float64Array(K + MARGIN);
  const ids = new Int32Array(K + MARGIN);
  for (let a = 0; a < n; a += CHUNK) {
    const m = Math.min(CHUNK, n - a);
    if (a > 0) {
      x = new Float32Array(m * dim);
      source.fill(x, a, m);
    }
    const coded = encodeTokens(model, x, m);
    for (let done = 0; done < coded.length;) done += writeSync(codesFd, coded, done);
    const e0 = performance.now();
    const kk = Math.min(K + MARGIN, m);
    const top = await kernel.topK(q, rows, x, m, dim, kk);
    const chunk = flatTokenStore(x, dim);
    for (let r = 0; r < rows; r++) {
      const local = top.indices.subarray(r * kk, (r + 1) * kk);
      chunk.dots(local, kk, q, r * dim, cand); // float64, as every store's rescoring
      for (let i = 0; i < kk; i++) ids[i] = a + local[i]!;
      mergeRow(best, r, cand.subarray(0, kk), ids.subarray(0, kk));
    }
    exactSeconds += (performance.now() - e0) / 1000;
    if ((a / CHUNK) % 32 === 31) note(`  source: ${a + m} of ${n} tokens`);
  }
  await kernel.dispose();
  fsyncSync(codesFd);
  closeSync(codesFd);
  renameSync(join(dir, 'codes.sq8.part'), join(dir, 'codes.sq8'));
  writeFileSync(join(dir, 'queries.f32'), new Uint8Array(q.buffer, q.byteOffset, q.byteLength));
  writeFileSync(join(dir, 'truth.i32'), new Uint8Array(best.tokens.buffer));
  const meta: SourceMeta = {
    tokens: n,
    dim,
    describe: source.describe,
    queryRows: rows,
    seconds: (performance.now() - t0) / 1000,
    exactSeconds,
    codeBytes: n * model.bytesPerToken,
    peakRssMb: peakRssMb(),
  };
  writeFileSync(join(dir, 'source.json'), `${JSON.stringify(meta)}\n`);
  return meta;
}

/** Phase 2: the index of `(centroids, bits)` built into its file. */
async function buildPhase(o: BigBankOptions): Promise<Record<string, unknown>> {
  const [c, bits] = (o.ivfSetting ?? '').split('-').map(Number) as [number, 2 | 4];
  const side = await sideOf(o);
  const kernel = new OrtSimilarityKernel();
  const t0 = performance.now();
  const params = {
    centroids: c,
    residualBits: bits,
    iterations: o.ivfIterations,
    ...(o.ivfSample === undefined ? {} : { sample: o.ivfSample }),
  };
  await IvfTokenIndex.buildFile(side, params, kernel, `${indexName(o, c, bits)}.bin`);
  const meta = { seconds: (performance.now() - t0) / 1000, peakRssMb: peakRssMb() };
  await kernel.dispose();
  writeFileSync(`${indexName(o, c, bits)}.json`, `${JSON.stringify(meta)}\n`);
  return meta;
}

/** The parent: each phase in its own process unless its files are there; the table. */
export async function runIvfLarge(o: BigBankOptions): Promise<void> {
  if (o.phase !== undefined) {
    const run = { source: sourcePhase, build: buildPhase, search: searchPhase }[o.phase];
    if (run === undefined) throw new Error(`unknown ivf-large phase ${o.phase}`);
    printJson(await run(o));
    return;
  }
  const dir = folderOf(o);
  note(`ivf large: ${o.tokens} tokens in ${dir}`);
  if (!existsSync(join(dir, 'source.json'))) runPhase('source');
  const source = JSON.parse(readFileSync(join(dir, 'source.json'), 'utf8')) as SourceMeta;
  note(`  source: ${source.seconds.toFixed(0)} s (exact pass ${source.exactSeconds.toFixed(0)} s)`);
  const table: string[][] = [];
  const json: object[] = [];
  for (const c of o.centroids) {
    for (const bits of o.residualBits) {
      const setting = ['--ivf-setting', `${c}-${bits}`];
      const name = indexName(o, c, bits);
      if (!existsSync(`${name}.json`)) runPhase('build', setting);
      const build = JSON.parse(readFileSync(`${name}.json`, 'utf8')) as Record<string, number>;
      note(`  ivf C=${c} ${bits}-bit: built in ${build.seconds!.toFixed(0)} s`);
      const search = runPhase('search', setting) as unknown as {
        openSeconds: number;
        peakRssMb: number;
        results: SearchResult[];
      };
      const ivfBytes = statSync(`${name}.bin`).size;
      for (const r of search.results) {
        table.push([
          `ivf ${bits}-bit`,
          String(c),
          String(r.nprobe),
          String(r.overFetch),
          String(r.threads),
          (ivfBytes / o.tokens).toFixed(1),
          build.seconds!.toFixed(0),
          (build.peakRssMb! / 1024).toFixed(2),
          (search.peakRssMb / 1024).toFixed(2),
          (r.scanned / 1e6).toFixed(2),
          r.readsPerQuery.toFixed(0),
          [r.centroidMs, r.scanMs, r.rescoreMs].map((v) => v.toFixed(1)).join(' / '),
          r.firstP50Ms.toFixed(1),
          r.p50Ms.toFixed(1),
          r.p90Ms.toFixed(1),
          r.recall.toFixed(4),
        ]);
      }
      json.push({ centroids: c, residualBits: bits, ivfBytes, build, search });
    }
  }
  out();
  out(
    `${o.tokens} tokens (${source.describe}); one query = ${o.rows} rows, k = ${K}, ${o.queries} queries; ` +
      `recall@64 against the exact fp32 top-64 of a streamed pass over every token (${source.exactSeconds.toFixed(0)} s for all ` +
      `${source.queryRows} rows, ${(source.exactSeconds / o.queries).toFixed(1)} s a query); proposals rescored from sq8 codes ` +
      `(${(source.codeBytes / o.tokens).toFixed(0)} B/token, read by position); ` +
      `${o.ivfReps} pass(es) over the queries, p50 over all (and over the first)`,
  );
  printTable({
    head: [
      'index',
      'centroids',
      'nprobe',
      'overFetch',
      'threads',
      'IVF B/token',
      'build s',
      'build GiB',
      'search GiB',
      'M scanned',
      'sq8 reads a query',
      'centroids / scan / rescore ms',
      'first-pass p50 ms',
      'p50 ms',
      'p90 ms',
      'recall@64',
    ],
    rows: table,
  });
  printJson({ tokens: o.tokens, rows: o.rows, k: K, queries: o.queries, source, results: json });
}
