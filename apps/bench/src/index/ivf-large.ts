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
import {
  IvfTokenIndex,
  OrtSimilarityKernel,
  encodeTokens,
  fileCodeSource,
  flatTokenStore,
  trainCodec,
  type CodecSide,
  type TokenHits,
} from '@bfe/index';
import { median, quantile } from '../shared/stats.js';
import { peakRssMb } from '../shared/machine.js';
import { note, out, printJson, printTable } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';
import { memoryOffsets, recallOf } from './ivf-bench.js';
import { runPhase } from './phase.js';
import { openTokenSource, type TokenSource } from './token-source.js';

const K = 64;
/** Kernel proposals per row and chunk beyond k, rescored in float64 (exactTopK's margin). */
const MARGIN = 16;
const CHUNK = 65_536;

/** The run's folder: one per source (tokens, noise or real, seed, queries). */
function folderOf(o: BigBankOptions): string {
  const what = o.real === true ? 'real' : `noise-${o.noise}`;
  return join(o.dir, `ivf-large-${o.tokens}-${what}-seed-${o.seed}-q-${o.queries}x${o.rows}`);
}

function sourceOf(o: BigBankOptions): Promise<TokenSource> {
  return openTokenSource({
    banks: (o.bank ?? '').split(',').filter((b) => b !== ''),
    real: o.real === true,
    noise: o.noise,
    seed: o.seed,
    queries: o.queries,
    rows: o.rows,
  });
}

/** The sq8 codec of the run: trained on the source's first chunk (the same every phase). */
async function codecOf(o: BigBankOptions) {
  const source = await sourceOf(o);
  const m = Math.min(CHUNK, o.tokens);
  const first = new Float32Array(m * source.dim);
  source.fill(first, 0, m);
  return { model: trainCodec('sq8', first, m, source.dim), first, source };
}

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

/**
 * The side the index searches: the sq8 codes by position, memories of 128 tokens; `stats`
 * counts the reads from the file.
 */
async function sideOf(
  o: BigBankOptions,
  stats?: { bytes: number; reads: number },
): Promise<CodecSide> {
  const { model } = await codecOf(o);
  const n = o.tokens;
  const codes = fileCodeSource(
    {
      path: join(folderOf(o), 'codes.sq8'),
      bytesPerToken: model.bytesPerToken,
      segments: [{ offset: 0, rows: n }],
    },
    stats === undefined ? {} : { stats },
  );
  const tokenOffsets = memoryOffsets(n);
  return { model, codes, tokenOffsets };
}

const indexName = (o: BigBankOptions, c: number, bits: number): string =>
  join(folderOf(o), `ivf-${c}-${bits}-sample-${o.ivfSample ?? 'default'}-it-${o.ivfIterations}`);

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

const f32 = (path: string): Float32Array => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const i32 = (path: string): Int32Array => {
  const b = readFileSync(path);
  return new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};

/** One setting's figures (phase 3). */
interface SearchResult {
  readonly nprobe: number;
  readonly overFetch: number;
  readonly threads: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly firstP50Ms: number;
  readonly recall: number;
  readonly scanned: number;
  readonly readsPerQuery: number;
  readonly centroidMs: number;
  readonly scanMs: number;
  readonly rescoreMs: number;
}

/** Phase 3: the index searched from its file, resident; each setting's figures. */
async function searchPhase(o: BigBankOptions): Promise<Record<string, unknown>> {
  const [c, bits] = (o.ivfSetting ?? '').split('-').map(Number) as [number, 2 | 4];
  const dir = folderOf(o);
  const reads = { bytes: 0, reads: 0 };
  const side = await sideOf(o, reads);
  const queries = f32(join(dir, 'queries.f32'));
  const truthTokens = i32(join(dir, 'truth.i32'));
  const dim = side.model.dim;
  const rows = o.rows;
  const kernel = new OrtSimilarityKernel({ spin: false });
  const t0 = performance.now();
  const index = IvfTokenIndex.open(
    `${indexName(o, c, bits)}.bin`,
    side,
    kernel,
    { nprobe: 1 },
    { resident: true },
  );
  const openSeconds = (performance.now() - t0) / 1000;
  const memories = Int32Array.from({ length: side.tokenOffsets.length - 1 }, (_, m) => m);
  const query = (i: number): Float32Array => queries.subarray(i * rows * dim, (i + 1) * rows * dim);
  const truth = (i: number): TokenHits =>
    ({ rows, tokens: truthTokens.subarray(i * rows * K, (i + 1) * rows * K) }) as TokenHits;
  const results: SearchResult[] = [];
  for (const nprobe of o.nprobe) {
    for (const overFetch of o.overFetch) {
      for (const threads of o.ivfThreads) {
        // As many onnxruntime threads for the centroid product as the scan has threads.
        const threadKernel = new OrtSimilarityKernel({ spin: false, threads });
        const probe = index.withSearch({ nprobe, overFetch, threads }, threadKernel);
        // The scan threads start (on the last query: the first pass begins with another).
        await probe.search(query(o.queries - 1), rows, K, { memories });
        // The latencies of every pass, and of the first (a query's rows met once).
        const ms: number[] = [];
        const first: number[] = [];
        let recall = 0;
        let scanned = 0;
        let readCount = 0;
        const split: [number, number, number] = [0, 0, 0];
        const n = o.queries * o.ivfReps;
        for (let pass = 0; pass < o.ivfReps; pass++) {
          for (let i = 0; i < o.queries; i++) {
            const reads0 = reads.reads;
            const t1 = performance.now();
            const hits = await probe.search(query(i), rows, K, { memories });
            const took = performance.now() - t1;
            ms.push(took);
            if (pass === 0) {
              first.push(took);
              recall += recallOf(hits, truth(i)) / o.queries;
            }
            const st = probe.stats!;
            readCount += (reads.reads - reads0) / n;
            scanned += st.tokensScored / n;
            split[0] += (st.centroidSeconds * 1e3) / n;
            split[1] += (st.scanSeconds * 1e3) / n;
            split[2] += (st.rescoreSeconds * 1e3) / n;
          }
        }
        await threadKernel.dispose();
        results.push({
          nprobe,
          overFetch,
          threads,
          p50Ms: median(ms),
          p90Ms: quantile(ms, 0.9),
          firstP50Ms: median(first),
          recall,
          scanned,
          readsPerQuery: readCount,
          centroidMs: split[0],
          scanMs: split[1],
          rescoreMs: split[2],
        });
        note(
          `    nprobe ${nprobe}, over-fetch ${overFetch}, ${threads} thread(s): p50 ${median(ms).toFixed(1)} ms (first pass ${median(first).toFixed(1)}), recall ${recall.toFixed(4)}, ${readCount.toFixed(0)} sq8 reads a query`,
        );
      }
    }
  }
  await index.close();
  await kernel.dispose();
  return { openSeconds, peakRssMb: peakRssMb(), results };
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
