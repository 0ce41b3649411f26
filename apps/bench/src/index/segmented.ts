/**
 * `pnpm bench:big-bank --segmented-build | --segmented-search`: the scaling curve's large HNSW
 * point as segmented graphs (the way Milvus segments work): the tiled LoCoMo bank of `scale.ts`
 * (same generator, seed and noise, so token `t` is the token the one-graph build would add), or
 * with `--real` several encoded banks' own states concatenated, no noise (`token-source.ts`), cut
 * into segments of `--segment-tokens` tokens, built one after another, each graph saved and
 * dropped before the next, so build memory is one segment whatever the bank's size.
 *
 * Per segment: the tokens are generated (fp32, stored only with `--keep-vectors`, as
 * `vectors.f32` for a peer built on the same vectors), encoded with the codec
 * (`--codec sq8 | sq4`, trained on the first segment's first `--sample` tokens; codes appended to
 * `codes.bin`), and one usearch **i8** graph is built over the decoded codes (usearch's int8
 * cast of the decoded codec values: the graph kind `HnswTokenIndex` gives sq8 / sq4) and saved
 * as `bank-<s>.usearch`. The exact fp32 reference is kept as it goes: each segment's exact top-k
 * for the sample of query rows (onnxruntime, the segment in RAM), merged into the running
 * top-k and saved as `exact-<segments>.json` after every segment, with `meta.json` (so a build
 * stopped at any point leaves a measurable prefix of segments).
 *
 * The search runs in its own process (its peak RSS is its own): `segmented-search.ts`. One query
 * = `--rows` real query token states of the first bank, k 64 (`--rows-per-query` at search
 * time cuts each into shorter queries).
 *
 * pnpm bench:big-bank --segmented-build --bank <LoCoMo bank dir> --index <dir> \
 *   --segment-tokens 1000000 --segments 20 --codec sq8 --threads 2
 * pnpm bench:big-bank --segmented-build --real --bank <LongMemEval-S bank>,<LoCoMo bank> \
 *   --index <dir> --segment-tokens 2000000 --segments 1 --codec sq8 --threads 2 --keep-vectors
 * pnpm bench:big-bank --segmented-search --index <dir> [--segments S] --ef-search 64,128
 */
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, statSync } from 'node:fs';
import { writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import {
  OrtSimilarityKernel,
  buildHnsw,
  decodeTokens,
  encodeTokens,
  exactTopK,
  flatBankSource,
  trainCodec,
  type CodecModel,
} from '@bfe/index';
import { z } from 'zod';
import { loadavg } from './scale.js';
import { openTokenSource } from './token-source.js';

const peakRssMb = (): number => process.resourceUsage().maxRSS / 1024;

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
  /** One bank (tiled), or with `real` the banks whose states are concatenated ({@link openTokenSource}). */
  readonly banks: readonly string[];
  readonly real: boolean;
  /** Also writes the fp32 tokens to `vectors.f32` (for a peer built on the same vectors). */
  readonly keepVectors: boolean;
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

/** Writes all of `bytes` at the file's position (in pieces of ≤ 256 MiB: one write takes < 2 GiB). */
function writeAll(fd: number, bytes: Uint8Array): void {
  for (let done = 0; done < bytes.length;) {
    done += writeSync(fd, bytes, done, Math.min(1 << 28, bytes.length - done));
  }
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
  const source = await openTokenSource(o);
  const { dim, queries: q } = source;
  if (o.segments * o.segmentTokens > source.tokens) {
    throw new Error(
      `${o.segments} × ${o.segmentTokens} tokens asked, the banks hold ${source.tokens}`,
    );
  }
  writeFileSync(join(o.dir, 'queries.f32'), new Uint8Array(q.buffer));
  const S = o.segmentTokens;
  const x = new Float32Array(S * dim);
  const decoded = new Float32Array(S * dim);
  const rowsAll = o.queries * o.rows;
  const refValues = new Float64Array(rowsAll * o.k).fill(-Infinity);
  const refTokens = new Int32Array(rowsAll * o.k).fill(-1);
  const kernel = new OrtSimilarityKernel({ threads: Math.max(1, o.threads) });
  const meta: SegmentedMeta = {
    source: source.describe,
    dim,
    segmentTokens: S,
    noise: o.real ? 0 : o.noise,
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
  const vectorsFd = o.keepVectors ? openSync(join(o.dir, 'vectors.f32'), 'w') : undefined;
  let model: CodecModel | undefined;
  try {
    for (let s = 0; s < o.segments; s++) {
      const base = s * S;
      const t0 = performance.now();
      source.fill(x, base, S);
      if (vectorsFd !== undefined) writeAll(vectorsFd, new Uint8Array(x.buffer));
      const t1 = performance.now();
      if (model === undefined) {
        const n = Math.min(o.sample, S);
        model = trainCodec(o.codec, x.subarray(0, n * dim), n, dim);
        writeFileSync(join(o.dir, 'codec.json'), `${JSON.stringify(model)}\n`);
      }
      const codes = encodeTokens(model, x, S);
      writeAll(codesFd, codes);
      decodeTokens(model, codes, 0, S, decoded);
      const t2 = performance.now();
      const cpu0 = process.cpuUsage();
      const index = await buildHnsw(decoded, S, dim, params, {
        kind: 'i8',
        threads: o.threads,
        buildThreads: o.threads,
      });
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
    if (vectorsFd !== undefined) closeSync(vectorsFd);
    await kernel.dispose();
  }
  return meta;
}

export function readSegmentedMeta(dir: string): SegmentedMeta {
  return segmentedMetaSchema.parse(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')));
}
