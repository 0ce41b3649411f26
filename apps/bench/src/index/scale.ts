/**
 * The HNSW half of `pnpm bench:big-bank`: one graph built once over a large bank of realistic
 * token vectors, saved with its vectors, queries and exact reference under `--index`, so that
 * the peer sweep, the filtering shapes and Milvus (`milvus-bench.ts`) read the same bank.
 *
 * The bank ("tiled LoCoMo"): the real MiniLM content-token states of an encoded LoCoMo bank
 * (206,142 tokens), tiled copy after copy until `N` tokens, every copy (the first included)
 * perturbed by Gaussian noise of norm ≈ `noise` and re-normalised (a copy's cosine to its
 * source ≈ 0.94 at 0.35). Queries: real LoCoMo query token states, the tokens of consecutive
 * questions joined until `rows` rows (never perturbed). Random unit vectors are the worst case
 * for HNSW and clustered synthetic banks are nearer random than real states are; this one is
 * real states, with repeats.
 *
 * The graph is built with usearch directly, with the exact configuration of `@bfe/index`'s
 * `buildHnsw` (inner product, f32, `multi: false`, key = token index), in one growing index
 * saved at each checkpoint in `--checkpoints` (so 1e5 → 1e6 → 2e6 cost one build; the times
 * are cumulative). `hnswPhase` loads a checkpoint through `HnswTokenIndex.load`: what bfe
 * runs (k + 16 proposals per row rescored in float64 from the stored fp32 codes).
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  HnswTokenIndex,
  OrtSimilarityKernel,
  exactTopK,
  flatBankSource,
  trainCodec,
} from '@bfe/index';
import type { HnswParams } from '@bfe/index';
import usearch from 'usearch';
import { z } from 'zod';
import { median, quantile } from '../shared/stats.js';
import { recallAt } from './measure.js';
import { openTokenSource } from './token-source.js';

const { Index, MetricKind, ScalarKind } = usearch;

/** What the build phase writes to `<dir>/meta.json`. */
export const scaleMetaSchema = z.object({
  source: z.string(),
  tokens: z.number().int().positive(),
  dim: z.number().int().positive(),
  queries: z.number().int().positive(),
  rows: z.number().int().positive(),
  noise: z.number().nonnegative(),
  memoryTokens: z.number().int().positive(),
  M: z.number().int().positive(),
  efConstruction: z.number().int().positive(),
  threads: z.number().int().nonnegative(),
  checkpoints: z.array(
    z.object({
      tokens: z.number().int().positive(),
      cumulativeBuildS: z.number(),
      segmentRate: z.number(),
      indexBytes: z.number(),
      peakRssMb: z.number(),
      load: z.string(),
    }),
  ),
});
export type ScaleMeta = z.infer<typeof scaleMetaSchema>;

export const loadavg = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ', 3).join(' ');
const peakRssMb = (): number => process.resourceUsage().maxRSS / 1024;

export interface BuildOptions {
  readonly bank: string;
  readonly dir: string;
  readonly checkpoints: readonly number[];
  readonly params: Pick<HnswParams, 'M' | 'efConstruction'>;
  readonly queries: number;
  readonly rows: number;
  readonly noise: number;
  readonly threads: number;
  readonly seed: number;
}

/** Writes the tiled bank, the queries, and the growing graph's checkpoints under `dir`. */
export async function buildScale(o: BuildOptions): Promise<ScaleMeta> {
  mkdirSync(o.dir, { recursive: true });
  const source = await openTokenSource({ ...o, banks: [o.bank], real: false });
  const { dim } = source;
  const N = Math.max(...o.checkpoints);
  const x = new Float32Array(N * dim);
  source.fill(x, 0, N);
  const fd = openSync(join(o.dir, 'vectors.f32'), 'w');
  try {
    const bytes = new Uint8Array(x.buffer);
    for (let done = 0; done < bytes.length;)
      done += writeSync(fd, bytes, done, Math.min(1 << 28, bytes.length - done));
  } finally {
    closeSync(fd);
  }
  writeFileSync(join(o.dir, 'queries.f32'), new Uint8Array(source.queries.buffer));

  const index = new Index({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: ScalarKind.F32,
    connectivity: o.params.M,
    expansion_add: o.params.efConstruction,
    expansion_search: 64,
    multi: false,
  });
  const meta: ScaleMeta = {
    source: source.describe,
    tokens: N,
    dim,
    queries: o.queries,
    rows: o.rows,
    noise: o.noise,
    memoryTokens: 20,
    M: o.params.M,
    efConstruction: o.params.efConstruction,
    threads: o.threads,
    checkpoints: [],
  };
  let done = 0;
  let cumulative = 0;
  for (const c of [...o.checkpoints].sort((a, z) => a - z)) {
    const keys = new BigUint64Array(c - done);
    for (let i = 0; i < keys.length; i++) keys[i] = BigInt(done + i);
    const t0 = performance.now();
    index.add(keys, x.subarray(done * dim, c * dim), o.threads);
    const s = (performance.now() - t0) / 1000;
    cumulative += s;
    const out = join(o.dir, `hnsw-${c}`);
    mkdirSync(out, { recursive: true });
    index.save(join(out, 'all.usearch'));
    meta.checkpoints.push({
      tokens: c,
      cumulativeBuildS: cumulative,
      segmentRate: (c - done) / s,
      indexBytes: statSync(join(out, 'all.usearch')).size,
      peakRssMb: peakRssMb(),
      load: loadavg(),
    });
    done = c;
    writeFileSync(join(o.dir, 'meta.json'), JSON.stringify(meta, null, 1));
    process.stderr.write(`  ${c} tokens: ${cumulative.toFixed(0)} s cumulative (${loadavg()})\n`);
  }
  return meta;
}

export function readMeta(dir: string): ScaleMeta {
  return scaleMetaSchema.parse(JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')));
}

export function readF32(path: string, values: number): Float32Array {
  const fd = openSync(path, 'r');
  const out = new Float32Array(values);
  const bytes = new Uint8Array(out.buffer);
  try {
    for (let done = 0; done < bytes.length;) {
      const n = readSync(fd, bytes, done, Math.min(1 << 28, bytes.length - done), done);
      if (n === 0) throw new Error(`${path} is shorter than ${values} floats`);
      done += n;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

function queriesOf(dir: string, meta: ScaleMeta): Float32Array {
  return readF32(join(dir, 'queries.f32'), meta.queries * meta.rows * meta.dim);
}

/** Exact fp32 top-k per query over the first `n` tokens (onnxruntime kernel, in RAM). */
export async function exactPhase(dir: string, n: number, k: number): Promise<object> {
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const x = readF32(join(dir, 'vectors.f32'), n * dim);
  const q = queriesOf(dir, meta);
  const kernel = new OrtSimilarityKernel();
  const latencies: number[] = [];
  const ref: number[] = [];
  try {
    for (let i = 0; i < meta.queries; i++) {
      const t0 = performance.now();
      const top = await exactTopK(
        kernel,
        q.subarray(i * rows * dim, (i + 1) * rows * dim),
        rows,
        flatBankSource(x, dim),
        { k },
      );
      latencies.push(performance.now() - t0);
      ref.push(...top.indices);
    }
  } finally {
    await kernel.dispose();
  }
  writeFileSync(join(dir, `exact-${n}.json`), JSON.stringify(ref));
  return summary('exact fp32 (onnxruntime, in RAM)', n, latencies, 1, peakRssMb());
}

function summary(
  what: string,
  n: number,
  latencies: number[],
  recall: number,
  rssMb: number,
): object {
  return {
    what,
    tokens: n,
    p50: median(latencies),
    p90: quantile(latencies, 0.9),
    recall,
    peakRssMb: rssMb,
    load: loadavg(),
  };
}

/**
 * One query at a time (all its rows, k) through `HnswTokenIndex` loaded from the f32 checkpoint
 * of `n` tokens, at each `efSearch`: p50/p90 per query and token recall@k vs `exact-<n>.json`.
 */
export async function hnswPhase(
  dir: string,
  n: number,
  k: number,
  efSearch: readonly number[],
  threads: number,
): Promise<object[]> {
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const x = readF32(join(dir, 'vectors.f32'), n * dim);
  const q = queriesOf(dir, meta);
  const ref = Int32Array.from(JSON.parse(readFileSync(join(dir, `exact-${n}.json`), 'utf8')));
  const memories = Math.ceil(n / meta.memoryTokens);
  const tokenOffsets = Int32Array.from({ length: memories + 1 }, (_, m) =>
    Math.min(n, m * meta.memoryTokens),
  );
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const side = {
    model: trainCodec('fp32', x, 1, dim),
    codes: new Uint8Array(x.buffer, 0, n * dim * 4),
    tokenOffsets,
  };
  const out: object[] = [];
  for (const ef of efSearch) {
    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
    const t0 = performance.now();
    const index = await HnswTokenIndex.load(join(dir, `hnsw-${n}`), side, params, {
      threads,
      kind: 'f32',
    });
    const loadS = (performance.now() - t0) / 1000;
    const latencies: number[] = [];
    let recall = 0;
    for (let rep = -1; rep < 1; rep++) {
      for (let i = 0; i < meta.queries; i++) {
        const s = performance.now();
        const hits = await index.search(q.subarray(i * rows * dim), rows, k, { memories: all });
        if (rep < 0) continue; // warm-up pass: pages the graph in
        latencies.push(performance.now() - s);
        recall += recallAt(hits.tokens, ref.subarray(i * rows * k), rows, k) / meta.queries;
      }
    }
    index.dispose();
    const what = `hnsw f32 ef ${ef} overFetch 1 threads ${threads}`;
    out.push({ ...summary(what, n, latencies, recall, peakRssMb()), loadS });
  }
  return out;
}
