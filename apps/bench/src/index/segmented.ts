/**
 * `pnpm bench:big-bank --segmented-build | --segmented-search`: the scaling curve's large HNSW
 * point as segmented graphs (the way Milvus segments work): the tiled LoCoMo bank of `scale.ts`
 * (same generator, seed and noise, so token `t` is the token the one-graph build would add) cut
 * into segments of `--segment-tokens` tokens, built one after another, each graph saved and
 * dropped before the next, so build memory is one segment whatever the bank's size.
 *
 * Per segment: the tokens are generated (fp32, never stored), encoded with the codec
 * (`--codec sq8 | sq4`, trained on the first segment's first `--sample` tokens; codes appended to
 * `codes.bin`), and one usearch **i8** graph is built over the decoded codes (usearch's int8
 * cast of the decoded codec values: the graph kind `HnswTokenIndex` gives sq8 / sq4) and saved
 * as `bank-<s>.usearch`. The exact fp32 reference is kept as it goes: each segment's exact top-k
 * for the sample of query rows (onnxruntime, the segment in RAM), merged into the running
 * top-k and saved as `exact-<segments>.json` after every segment, with `meta.json` (so a build
 * stopped at any point leaves a measurable prefix of segments).
 *
 * The search (its own process: its peak RSS is its own) is bfe's: `HnswTokenIndex.load` over the
 * segments as banks (`memoryBank`: one graph per segment, each searched whole, `k + 16`
 * proposals each), graphs memory-mapped (`view`), every proposal rescored in float64 from the
 * codes — read by position from `codes.bin` (`fileCodeSource`), or with `--codes-in-ram` held in
 * memory. One query = `--rows` real LoCoMo query token states, k 64.
 *
 * pnpm bench:big-bank --segmented-build --bank <LoCoMo bank dir> --index <dir> \
 *   --segment-tokens 1000000 --segments 20 --codec sq8 --threads 2
 * pnpm bench:big-bank --segmented-search --index <dir> [--segments S] --ef-search 64,128
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync } from 'node:fs';
import { writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openBank } from '@bfe/encoder';
import {
  HnswTokenIndex,
  OrtSimilarityKernel,
  buildHnsw,
  codecModelSchema,
  decodeTokens,
  encodeTokens,
  exactTopK,
  fileCodeSource,
  flatBankSource,
  trainCodec,
  type CodecModel,
} from '@bfe/index';
import { z } from 'zod';
import { median, quantile } from '../shared/stats.js';
import { recallAt } from './measure.js';
import { gaussianSource, loadavg, readF32, tiledQueries } from './scale.js';

const peakRssMb = (): number => process.resourceUsage().maxRSS / 1024;

/** Resident MiB now: anonymous (heap, arrays) and file-backed (touched pages of mapped files). */
function rssNow(): { anon: number; file: number } {
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (name: string): number =>
    Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { anon: kb('RssAnon') / 1024, file: kb('RssFile') / 1024 };
}

/** `<dir>/meta.json` of a segmented build. */
export const segmentedMetaSchema = z.object({
  source: z.string(),
  dim: z.number().int().positive(),
  segmentTokens: z.number().int().positive(),
  noise: z.number().nonnegative(),
  seed: z.number().int(),
  codec: z.enum(['sq8', 'sq4']),
  graph: z.literal('i8'),
  M: z.number().int().positive(),
  efConstruction: z.number().int().positive(),
  threads: z.number().int().nonnegative(),
  queries: z.number().int().positive(),
  rows: z.number().int().positive(),
  k: z.number().int().positive(),
  memoryTokens: z.number().int().positive(),
  segments: z.array(
    z.object({
      genS: z.number(),
      codecS: z.number(),
      buildS: z.number(),
      buildCpuS: z.number().optional(), // all threads' CPU s (a niced build's wall is inflated)
      exactS: z.number(),
      graphBytes: z.number(),
      codeBytes: z.number(),
      peakRssMb: z.number(),
      load: z.string(),
    }),
  ),
});
export type SegmentedMeta = z.infer<typeof segmentedMetaSchema>;

export interface SegmentedBuildOptions {
  readonly bank: string;
  readonly dir: string;
  readonly segmentTokens: number;
  readonly segments: number;
  readonly codec: 'sq8' | 'sq4';
  readonly sample: number;
  readonly M: number;
  readonly efConstruction: number;
  readonly threads: number;
  readonly noise: number;
  readonly seed: number;
  readonly queries: number;
  readonly rows: number;
  readonly k: number;
}

/** Writes `value` as JSON to `path` through a temporary file (never half-written). */
function writeJson(path: string, value: unknown): void {
  writeFileSync(`${path}.tmp`, JSON.stringify(value, null, 1));
  renameSync(`${path}.tmp`, path);
}

/** Merges a segment's exact top-k (local indices from `base`) into row `r`'s: similarity ↓, token ↑. */
function mergeTop(
  values: Float64Array,
  tokens: Int32Array,
  at: number,
  k: number,
  segValues: Float64Array,
  segIndices: Int32Array,
  segAt: number,
  base: number,
): void {
  const all: [number, number][] = [];
  for (let j = 0; j < k; j++) {
    if (tokens[at + j]! >= 0) all.push([values[at + j]!, tokens[at + j]!]);
    all.push([segValues[segAt + j]!, base + segIndices[segAt + j]!]);
  }
  all.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let j = 0; j < k; j++) {
    values[at + j] = all[j]![0];
    tokens[at + j] = all[j]![1];
  }
}

/** Builds the segments (see the file's comment); returns the meta written. */
export async function buildSegments(o: SegmentedBuildOptions): Promise<SegmentedMeta> {
  mkdirSync(o.dir, { recursive: true });
  const b = await openBank(o.bank, { verifyHashes: false });
  const { dim } = b;
  const src = b.memories.tokenVectors;
  const srcN = b.memories.tokenOwner.length;
  const q = tiledQueries(b.queries, dim, o.queries, o.rows);
  writeFileSync(join(o.dir, 'queries.f32'), new Uint8Array(q.buffer));
  const next = gaussianSource(o.seed);
  const sigma = o.noise / Math.sqrt(dim);
  const S = o.segmentTokens;
  const x = new Float32Array(S * dim);
  const decoded = new Float32Array(S * dim);
  const rowsAll = o.queries * o.rows;
  const refValues = new Float64Array(rowsAll * o.k).fill(-Infinity);
  const refTokens = new Int32Array(rowsAll * o.k).fill(-1);
  const kernel = new OrtSimilarityKernel({ threads: Math.max(1, o.threads) });
  const meta: SegmentedMeta = {
    source: `${o.bank} (${srcN} LoCoMo tokens, tiled)`,
    dim,
    segmentTokens: S,
    noise: o.noise,
    seed: o.seed,
    codec: o.codec,
    graph: 'i8',
    M: o.M,
    efConstruction: o.efConstruction,
    threads: o.threads,
    queries: o.queries,
    rows: o.rows,
    k: o.k,
    memoryTokens: 20,
    segments: [],
  };
  const params = { M: o.M, efConstruction: o.efConstruction, efSearch: 64 };
  const codesFd = openSync(join(o.dir, 'codes.bin'), 'w');
  let model: CodecModel | undefined;
  try {
    for (let s = 0; s < o.segments; s++) {
      const base = s * S;
      const t0 = performance.now();
      for (let t = 0; t < S; t++) {
        const from = ((base + t) % srcN) * dim;
        let ss = 0;
        for (let d = 0; d < dim; d++) {
          const v = src[from + d]! + sigma * next();
          x[t * dim + d] = v;
          ss += v * v;
        }
        const f = 1 / Math.sqrt(ss);
        for (let d = 0; d < dim; d++) x[t * dim + d]! *= f;
      }
      const t1 = performance.now();
      if (model === undefined) {
        const n = Math.min(o.sample, S);
        model = trainCodec(o.codec, x.subarray(0, n * dim), n, dim);
        writeFileSync(join(o.dir, 'codec.json'), `${JSON.stringify(model)}\n`);
      }
      const codes = encodeTokens(model, x, S);
      for (let done = 0; done < codes.length;) {
        done += writeSync(codesFd, codes, done, codes.length - done);
      }
      decodeTokens(model, codes, 0, S, decoded);
      const t2 = performance.now();
      const cpu0 = process.cpuUsage();
      const index = await buildHnsw(decoded, S, dim, params, { kind: 'i8', threads: o.threads });
      const t3 = performance.now();
      const buildCpuS = ((c) => (c.user + c.system) / 1e6)(process.cpuUsage(cpu0));
      const file = join(o.dir, `bank-${s}.usearch`);
      await index.save(file);
      index.dispose();
      const t4 = performance.now();
      for (let i = 0; i < o.queries; i++) {
        const qi = q.subarray(i * o.rows * dim, (i + 1) * o.rows * dim);
        const top = await exactTopK(kernel, qi, o.rows, flatBankSource(x, dim), { k: o.k });
        for (let r = 0; r < o.rows; r++) {
          const at = (i * o.rows + r) * o.k;
          mergeTop(refValues, refTokens, at, o.k, top.values, top.indices, r * o.k, base);
        }
      }
      const t5 = performance.now();
      meta.segments.push({
        genS: (t1 - t0) / 1000,
        codecS: (t2 - t1) / 1000,
        buildS: (t3 - t2) / 1000,
        buildCpuS,
        exactS: (t5 - t4) / 1000,
        graphBytes: statSync(file).size,
        codeBytes: codes.length,
        peakRssMb: peakRssMb(),
        load: loadavg(),
      });
      writeJson(join(o.dir, `exact-${s + 1}.json`), Array.from(refTokens));
      writeJson(join(o.dir, 'meta.json'), meta);
      process.stderr.write(
        `  segment ${s + 1}/${o.segments}: gen ${((t1 - t0) / 1000).toFixed(0)} s, codec ${((t2 - t1) / 1000).toFixed(0)} s, graph ${((t3 - t2) / 1000).toFixed(0)} s (${(S / ((t3 - t2) / 1000)).toFixed(0)} tok/s, ${buildCpuS.toFixed(0)} CPU s), exact ${((t5 - t4) / 1000).toFixed(1)} s (${loadavg()})\n`,
      );
    }
  } finally {
    closeSync(codesFd);
    await kernel.dispose();
  }
  return meta;
}

export function readSegmentedMeta(dir: string): SegmentedMeta {
  return segmentedMetaSchema.parse(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')));
}

export interface SegmentedSearchOptions {
  /** Segments searched (the first S; default all built). */
  readonly segments?: number;
  readonly efSearch: readonly number[];
  readonly threads: number;
  /** Codes read whole into memory instead of by position. */
  readonly codesInRam: boolean;
}

/**
 * One query at a time (all its rows, k) through `HnswTokenIndex` over the first S segments'
 * graphs (viewed), at each `efSearch`: p50 / p90 per query over the sample (after a warm-up
 * pass), token recall@k vs `exact-<S>.json`, the process's peak RSS.
 */
export async function searchSegments(dir: string, o: SegmentedSearchOptions): Promise<object[]> {
  const meta = readSegmentedMeta(dir);
  const S = o.segments ?? meta.segments.length;
  if (S < 1 || S > meta.segments.length) {
    throw new Error(`${dir} has ${meta.segments.length} segments built, asked for ${S}`);
  }
  const { dim, rows, k, memoryTokens, segmentTokens } = meta;
  const n = S * segmentTokens;
  const model = codecModelSchema.parse(
    JSON.parse(readFileSync(join(dir, 'codec.json'), 'utf8')),
  ) as CodecModel;
  const codesPath = join(dir, 'codes.bin');
  const t0 = performance.now();
  const onDisk = fileCodeSource({
    path: codesPath,
    bytesPerToken: model.bytesPerToken,
    segments: [{ offset: 0, rows: n }],
  });
  let codes: Uint8Array | typeof onDisk = onDisk;
  if (o.codesInRam) {
    // The first S segments' codes, copied into memory one segment at a time.
    codes = new Uint8Array(n * model.bytesPerToken);
    for (let a = 0; a < n; a += segmentTokens) {
      codes.set(onDisk.bytes(a, a + segmentTokens), a * model.bytesPerToken);
    }
  }
  const codesS = (performance.now() - t0) / 1000;
  const memories = Math.ceil(n / memoryTokens);
  const tokenOffsets = Int32Array.from({ length: memories + 1 }, (_, m) =>
    Math.min(n, m * memoryTokens),
  );
  const memoryBank = Int32Array.from({ length: memories }, (_, m) =>
    Math.floor((m * memoryTokens) / segmentTokens),
  );
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const q = readF32(join(dir, 'queries.f32'), meta.queries * rows * dim);
  const ref = Int32Array.from(JSON.parse(readFileSync(join(dir, `exact-${S}.json`), 'utf8')));
  let graphBytes = 0;
  for (let s = 0; s < S; s++) graphBytes += statSync(join(dir, `bank-${s}.usearch`)).size;
  const out: object[] = [];
  for (const ef of o.efSearch) {
    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
    const t1 = performance.now();
    const index = await HnswTokenIndex.load(
      dir,
      { model, codes, tokenOffsets, memoryBank },
      params,
      {
        kind: 'i8',
        view: true,
        openGraphs: S,
        threads: o.threads,
      },
    );
    const loadS = (performance.now() - t1) / 1000;
    const latencies: number[] = [];
    let recall = 0;
    let widened = 0;
    let anon = 0;
    let file = 0;
    for (let rep = -1; rep < 1; rep++) {
      for (let i = 0; i < meta.queries; i++) {
        const s = performance.now();
        const hits = await index.search(q.subarray(i * rows * dim), rows, k, { memories: all });
        const now = rssNow();
        anon = Math.max(anon, now.anon);
        file = Math.max(file, now.file);
        if (rep < 0) continue; // warm-up pass: maps the graphs, pages them in
        latencies.push(performance.now() - s);
        widened += hits.widenedRows ?? 0;
        recall += recallAt(hits.tokens, ref.subarray(i * rows * k), rows, k) / meta.queries;
      }
    }
    index.dispose();
    out.push({
      what: `segmented hnsw i8 over ${meta.codec}, ${S} × ${segmentTokens} tokens, ef ${ef}, codes ${o.codesInRam ? 'in RAM' : 'by position'}`,
      tokens: n,
      segments: S,
      efSearch: ef,
      p50: median(latencies),
      p90: quantile(latencies, 0.9),
      recall,
      widenedRows: widened,
      queries: meta.queries,
      rows,
      graphBytes,
      codeBytes: n * model.bytesPerToken,
      loadS,
      codesS,
      peakRssMb: peakRssMb(),
      maxRssAnonMb: anon,
      maxRssFileMb: file,
      load: loadavg(),
    });
  }
  onDisk.close();
  return out;
}

/** `--segmented-build` / `--segmented-search` of `pnpm bench:big-bank`: prints the JSON result. */
export async function runSegmented(
  v: Record<string, string | boolean | undefined>,
  k: number,
): Promise<void> {
  const str = (key: string): string => {
    const s = v[key];
    if (typeof s !== 'string') throw new Error(`--${key} is required`);
    return s;
  };
  const segments = typeof v.segments === 'string' ? Number(v.segments) : undefined;
  let out: unknown;
  if (v['segmented-build'] === true) {
    const codec = str('codec');
    if (codec !== 'sq8' && codec !== 'sq4') throw new Error(`--codec sq8 | sq4, got ${codec}`);
    out = await buildSegments({
      bank: str('bank'),
      dir: str('index'),
      segmentTokens: Number(str('segment-tokens')),
      segments: segments ?? 20,
      codec,
      sample: Number(str('sample')),
      M: Number(str('M')),
      efConstruction: Number(str('ef-construction')),
      threads: Number(str('threads')),
      noise: Number(str('noise')),
      seed: 7,
      queries: Number(str('queries')),
      rows: Number(str('rows')),
      k,
    });
  } else {
    out = await searchSegments(str('index'), {
      ...(segments === undefined ? {} : { segments }),
      efSearch: str('ef-search').split(',').map(Number),
      threads: Number(str('threads')),
      codesInRam: v['codes-in-ram'] === true,
    });
  }
  process.stdout.write(`${JSON.stringify(out)}\n`);
}
