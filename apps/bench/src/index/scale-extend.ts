/**
 * `pnpm bench:big-bank --hnsw-extend`: how far the HNSW scale curve's 2e7-token graph can be built
 * on this machine, measured, not guessed. A full 2e7 build does not fit the time (≈ 650 tokens/s
 * measured from 1e6 to 2e6) and, at f32, not the RAM (≈ 1,685 graph bytes per token), so this
 * loads the saved 2e6 checkpoint (`<index>/hnsw-<from>/all.usearch`, the scale bench's graph;
 * with `--graph i8` converted once by `rekindHnswFile`) and keeps adding the same tiled bank's
 * next tokens — the same generator and seed as `buildScale`, its first `from · dim` draws
 * skipped, so token `t` is exactly the one a 2e7 build would add — in batches for `--seconds`,
 * recording each batch's rate, the process RSS and the file bytes per token. It then states the
 * extrapolation to 2e7: time at the measured rate (a lower bound: an insert's cost grows with
 * the graph's depth) and memory at the measured bytes per added token.
 *
 * pnpm bench:big-bank --hnsw-extend --bank <encoded LoCoMo bank dir> --index /work/scratch/scale/tiled \
 *   --from 2000000 --seconds 300 --graph f32|i8 --graphs <scratch dir> [--threads 2]
 */
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import { openBank } from '@bfe/encoder';
import { rekindHnswFile, type HnswScalarKind } from '@bfe/index';
import usearch from 'usearch';
import { loadavg, readMeta } from './scale.js';
import { gaussianSource } from './token-source.js';

const { Index, MetricKind, ScalarKind } = usearch;
const TARGET = 20_000_000;
const BATCH = 5_000;

export interface ExtendOptions {
  readonly bank: string;
  readonly index: string;
  readonly from: number;
  readonly seconds: number;
  readonly kind: Exclude<HnswScalarKind, 'f16'>;
  /** Scratch folder for the i8 copy of the checkpoint and the extended graph's file. */
  readonly work: string;
  readonly threads: number;
}

const rssMb = (): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m![1]) / 1024;
};

/** Extends the checkpoint graph for `seconds`; the JSON summary with its extrapolation. */
export async function extendScale(o: ExtendOptions): Promise<object> {
  const meta = readMeta(o.index);
  const checkpoint = meta.checkpoints.find((c) => c.tokens === o.from);
  if (checkpoint === undefined) throw new Error(`${o.index} has no ${o.from}-token checkpoint`);
  const b = await openBank(o.bank, { verifyHashes: false });
  const dim = b.dim;
  const src = b.memories.tokenVectors;
  const srcN = b.memories.tokenOwner.length;
  if (!meta.source.includes(`(${srcN} LoCoMo tokens`))
    throw new Error(`${o.bank} has ${srcN} tokens; the tiled bank was made from ${meta.source}`);
  mkdirSync(o.work, { recursive: true });
  let file = join(o.index, `hnsw-${o.from}`, 'all.usearch');
  if (o.kind === 'i8') {
    const i8 = join(o.work, `hnsw-${o.from}-i8.usearch`);
    if (!existsSync(i8)) await rekindHnswFile(file, i8, 'i8', dim);
    file = i8;
  }
  const index = new Index({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: o.kind === 'i8' ? ScalarKind.I8 : ScalarKind.F32,
    connectivity: meta.M,
    expansion_add: meta.efConstruction,
    expansion_search: 64,
    multi: false,
  });
  const t0 = performance.now();
  index.load(file);
  const loadSeconds = (performance.now() - t0) / 1000;
  if (index.size() !== o.from) throw new Error(`${file} holds ${index.size()} tokens`);
  const rssLoaded = rssMb();

  // The tiled bank's generator (buildScale: seed 7, one draw per value), its first
  // (from − 1) · dim draws skipped; token from − 1 is made again and must equal the saved one.
  const next = gaussianSource(7);
  const sigma = meta.noise / Math.sqrt(dim);
  const tile = (t: number, into: Float32Array, at: number): void => {
    const s = (t % srcN) * dim;
    let ss = 0;
    for (let d = 0; d < dim; d++) {
      const v = src[s + d]! + sigma * next();
      into[at + d] = v;
      ss += v * v;
    }
    const f = 1 / Math.sqrt(ss);
    for (let d = 0; d < dim; d++) into[at + d]! *= f;
  };
  const t1 = performance.now();
  for (let i = 0; i < (o.from - 1) * dim; i++) next();
  const skipSeconds = (performance.now() - t1) / 1000;
  const again = new Float32Array(dim);
  tile(o.from - 1, again, 0);
  const saved = new Float32Array(dim);
  const fd = openSync(join(o.index, 'vectors.f32'), 'r');
  try {
    readSync(fd, new Uint8Array(saved.buffer), 0, dim * 4, (o.from - 1) * dim * 4);
  } finally {
    closeSync(fd);
  }
  if (again.some((v, d) => v !== saved[d]))
    throw new Error(`token ${o.from - 1} made again differs from vectors.f32: not the same bank`);
  const x = new Float32Array(BATCH * dim);
  const keys = new BigUint64Array(BATCH);
  const batches: { tokens: number; seconds: number; rate: number; rssMb: number; load: string }[] =
    [];
  let added = 0;
  let addSeconds = 0;
  while (addSeconds < o.seconds) {
    const start = o.from + added;
    for (let j = 0; j < BATCH; j++) {
      tile(start + j, x, j * dim);
      keys[j] = BigInt(start + j);
    }
    const ta = performance.now();
    index.add(keys, x, o.threads);
    const s = (performance.now() - ta) / 1000;
    addSeconds += s;
    added += BATCH;
    batches.push({
      tokens: start + BATCH,
      seconds: s,
      rate: BATCH / s,
      rssMb: rssMb(),
      load: loadavg(),
    });
    process.stderr.write(
      `  ${start + BATCH} tokens: ${(BATCH / s).toFixed(0)} tok/s, RSS ${rssMb().toFixed(0)} MB (${loadavg()})\n`,
    );
  }
  const rssAfter = rssMb();
  const out = join(o.work, `extended-${o.kind}.usearch`);
  index.save(out);
  const fileBytes = statSync(out).size;
  rmSync(out);
  const total = o.from + added;
  const rate = added / addSeconds;
  // RSS slope from the first batch to the last: the RSS before the first batch still holds the
  // bank's and the skip's garbage, which V8 may return meanwhile (a negative slope on 2e6 f32).
  const first = batches[0]!;
  const last = batches.at(-1)!;
  const rssPerToken =
    batches.length > 1
      ? ((last.rssMb - first.rssMb) * 2 ** 20) / (last.tokens - first.tokens)
      : NaN;
  const fileBytesPerToken = fileBytes / total;
  const remaining = TARGET - total;
  return {
    kind: o.kind,
    M: meta.M,
    efConstruction: meta.efConstruction,
    threads: o.threads,
    from: o.from,
    added,
    total,
    loadSeconds,
    skipSeconds,
    addSeconds,
    rate,
    rateFirstBatch: first.rate,
    rateLastBatch: last.rate,
    rssLoadedMb: rssLoaded,
    rssAfterMb: rssAfter,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    rssBytesPerAddedToken: rssPerToken,
    rssMbFirstLastBatch: [first.rssMb, last.rssMb],
    fileBytes,
    fileBytesPerToken,
    extrapolated: {
      target: TARGET,
      remainingTokens: remaining,
      hoursAtMeasuredRate: remaining / rate / 3600,
      totalHoursFromZero: (checkpoint.cumulativeBuildS + addSeconds + remaining / rate) / 3600,
      fileGb: (fileBytesPerToken * TARGET) / 1e9,
      rssGbAtTarget: (rssAfter * 2 ** 20 + rssPerToken * remaining) / 2 ** 30,
    },
    loads: [first.load, last.load],
  };
}
