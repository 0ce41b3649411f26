/**
 * `pnpm bench:big-bank`: a benchmark, not a test. A bank larger than RAM, searched exactly with
 * bounded memory. Writes a synthetic bank of N unit tokens (default 2e7 × 384 float32 ≈ 30 GB)
 * to one file in 65,536-token chunks, then one query (32 tokens, k = 64) in two ways, each in its
 * own child process so that its peak RSS is its own:
 *
 * - **fp32 streamed**: the exact backend reading the file through `fileTokenStore` (pread of one
 *   chunk at a time into a reused buffer; the k + 16 proposals rescored in float64 from the file);
 * - **sq4 in RAM**: SQ4 trained on the first `--sample` tokens (`trainCodec`), every token encoded
 *   (`encodeTokens`, 192 B/token) and kept in memory, searched on decoded chunks and rescored in
 *   float64 from the decoded codes; token recall@64 against the fp32 top-64.
 *
 * The file is deleted at the end unless `--keep`.
 *
 * pnpm bench:big-bank --tokens 1000000
 *
 * `--hnsw-build` / `--peer-sweep` / `--filtering`: the HNSW scale bench of `scale-cli.ts`
 * instead; `--milvus --checkpoints 100000,1000000`: Milvus Lite beside them (`milvus-bench.ts`;
 * `--milvus-reindex`: one insert, the index replaced per type; `--milvus-warmup N` queries).
 * `--ivf`: the clustered residual backend beside exact on real tokens (`ivf-bench.ts`);
 * `--ivf-grow`: the same index grown by appends, deleted from and compacted (`ivf-grow.ts`).
 * `--ivf-large`: the clustered backend on a bank never held whole, up to 2e7 tokens (`ivf-large.ts`).
 * `--segmented-build` / `--segmented-search`: the large HNSW point as segmented i8 graphs over
 * sq8 / sq4 codes, memory-mapped and rescored from the codes (`segmented.ts`).
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import {
  OrtSimilarityKernel,
  decodeTokens,
  dotsInto,
  encodeTokens,
  exactTopK,
  fileTokenStore,
  trainCodec,
  type BankChunkSource,
  type TokenStore,
} from '@bfe/index';
import { note, out, printJson, printTable } from '../shared/table.js';
import { parseBigBank } from './big-bank-cli.js';
import { runMilvusBench } from './milvus-bench.js';
import { runScale } from './scale-cli.js';
import { runSegmented } from './segmented-cli.js';
import { runIvfBench } from './ivf-bench.js';
import { runIvfGrowBench } from './ivf-grow.js';
import { runIvfLarge } from './ivf-large.js';
import { runPhase } from './phase.js';

const values = parseBigBank();
const N = values.tokens;
const DIM = values.dim;
const ROWS = values.queryTokens;
const K = values.k;
const CHUNK = 65_536;
const BLOCK = 1 << 20; // tokens per SQ4 code block (codes live in several arrays)
const bankPath = join(values.dir, 'tokens.f32');
const queryPath = join(values.dir, 'queries.f32');
const exactPath = join(values.dir, 'exact.json');
const peakRssMb = (): number => process.resourceUsage().maxRSS / 1024;

/** xorshift32 uniform in [-1, 1): cheap enough for 7.7e9 values. */
function uniform(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2147483648 - 1;
  };
}

function normalise(v: Float32Array, at: number): void {
  let ss = 0;
  for (let j = 0; j < DIM; j++) ss += v[at + j]! ** 2;
  const inv = 1 / Math.sqrt(ss);
  for (let j = 0; j < DIM; j++) v[at + j]! *= inv;
}

/** Writes the bank chunk by chunk; queries are noisy copies of 32 spread-out bank tokens. */
function writeBank(): Record<string, number> {
  const t0 = performance.now();
  mkdirSync(values.dir, { recursive: true });
  const next = uniform(values.seed);
  const chunk = new Float32Array(CHUNK * DIM);
  const queries = new Float32Array(ROWS * DIM);
  const picks = Array.from({ length: ROWS }, (_, q) => Math.floor(((q + 0.5) * N) / ROWS));
  const fd = openSync(bankPath, 'w');
  try {
    for (let start = 0; start < N; start += CHUNK) {
      const n = Math.min(CHUNK, N - start);
      for (let t = 0; t < n; t++) {
        for (let j = 0; j < DIM; j++) chunk[t * DIM + j] = next();
        normalise(chunk, t * DIM);
      }
      picks.forEach((p, q) => {
        if (p < start || p >= start + n) return;
        for (let j = 0; j < DIM; j++)
          queries[q * DIM + j] = chunk[(p - start) * DIM + j]! + 0.05 * next();
        normalise(queries, q * DIM);
      });
      const bytes = new Uint8Array(chunk.buffer, 0, n * DIM * 4);
      for (let done = 0; done < bytes.length;) done += writeSync(fd, bytes, done);
    }
  } finally {
    closeSync(fd);
  }
  writeFileSync(queryPath, new Uint8Array(queries.buffer));
  return { seconds: (performance.now() - t0) / 1000, bytes: N * DIM * 4, peakRssMb: peakRssMb() };
}

function readQueries(): Float32Array {
  const b = readFileSync(queryPath);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
}

/** A `TokenStore` as the exact top-k's chunk source. */
function storeSource(store: TokenStore): BankChunkSource {
  return {
    size: store.size,
    dim: store.dim,
    read: (a, b) => store.read(a, b),
    dots: (indices, from, count, q, at, out) =>
      store.dots(indices.subarray(from, from + count), count, q, at, out),
  };
}

async function searchFp32(): Promise<Record<string, number>> {
  const stats = { bytes: 0, reads: 0 };
  const store = fileTokenStore(
    { path: bankPath, dim: DIM, dtype: 'float32', segments: [{ offset: 0, rows: N }] },
    { stats },
  );
  const kernel = new OrtSimilarityKernel();
  try {
    const t0 = performance.now();
    const top = await exactTopK(kernel, readQueries(), ROWS, storeSource(store), { k: K });
    const seconds = (performance.now() - t0) / 1000;
    writeFileSync(exactPath, JSON.stringify(Array.from(top.indices)));
    return {
      seconds,
      bytesRead: stats.bytes,
      reads: stats.reads,
      passes: top.passes,
      peakRssMb: peakRssMb(),
    };
  } finally {
    store.close();
    await kernel.dispose();
  }
}

async function searchSq4(): Promise<Record<string, number>> {
  const store = fileTokenStore({
    path: bankPath,
    dim: DIM,
    dtype: 'float32',
    segments: [{ offset: 0, rows: N }],
  });
  const sample = Math.min(N, values.sample);
  const t0 = performance.now();
  const model = trainCodec('sq4', store.read(0, sample).slice(), sample, DIM);
  const blocks: Uint8Array[] = [];
  for (let b = 0; b < N; b += BLOCK) {
    const n = Math.min(BLOCK, N - b);
    const block = new Uint8Array(n * model.bytesPerToken);
    for (let a = 0; a < n; a += CHUNK) {
      const m = Math.min(CHUNK, n - a);
      block.set(encodeTokens(model, store.read(b + a, b + a + m), m), a * model.bytesPerToken);
    }
    blocks.push(block);
  }
  store.close();
  const encodeSeconds = (performance.now() - t0) / 1000;
  let scratch = new Float32Array(CHUNK * DIM);
  let rescored = new Float32Array(0);
  let offsets = new Int32Array(0);
  const source: BankChunkSource = {
    size: N,
    dim: DIM,
    read(a, b) {
      if (scratch.length < (b - a) * DIM) scratch = new Float32Array((b - a) * DIM);
      for (let t = a; t < b;) {
        const blk = Math.floor(t / BLOCK);
        const end = Math.min(b, (blk + 1) * BLOCK);
        decodeTokens(
          model,
          blocks[blk]!,
          t - blk * BLOCK,
          end - blk * BLOCK,
          scratch.subarray((t - a) * DIM),
        );
        t = end;
      }
      return scratch.subarray(0, (b - a) * DIM);
    },
    dots(indices, from, count, q, at, out) {
      if (rescored.length < count * DIM) rescored = new Float32Array(count * DIM);
      if (offsets.length < count) offsets = new Int32Array(count);
      for (let h = 0; h < count; h++) {
        const t = indices[from + h]!;
        const blk = Math.floor(t / BLOCK);
        decodeTokens(
          model,
          blocks[blk]!,
          t - blk * BLOCK,
          t - blk * BLOCK + 1,
          rescored.subarray(h * DIM),
        );
        offsets[h] = h * DIM;
      }
      dotsInto(rescored, offsets, count, q, at, out, DIM);
    },
  };
  const kernel = new OrtSimilarityKernel();
  try {
    const t1 = performance.now();
    const top = await exactTopK(kernel, readQueries(), ROWS, source, { k: K });
    const seconds = (performance.now() - t1) / 1000;
    const exact = JSON.parse(readFileSync(exactPath, 'utf8')) as number[];
    let found = 0;
    for (let r = 0; r < ROWS; r++) {
      const want = new Set(exact.slice(r * K, (r + 1) * K));
      for (let o = 0; o < K; o++) if (want.has(top.indices[r * K + o]!)) found++;
    }
    return {
      encodeSeconds,
      seconds,
      codeBytes: N * model.bytesPerToken,
      recall: found / (ROWS * K),
      peakRssMb: peakRssMb(),
    };
  } finally {
    await kernel.dispose();
  }
}

/** Runs one phase in a child process (its own peak RSS) and returns its JSON line. */
const child = (phase: string): Record<string, number> => runPhase(phase) as Record<string, number>;

if (values.ivfLarge === true) {
  await runIvfLarge(values);
} else if (values.ivfGrow === true) {
  await runIvfGrowBench(values);
} else if (values.ivf === true) {
  await runIvfBench(values);
} else if (values.segmentedBuild === true || values.segmentedSearch === true) {
  await runSegmented(values);
} else if (values.milvus === true) {
  await runMilvusBench(values);
} else if (values.hnswBuild === true || values.peerSweep === true || values.filtering === true) {
  await runScale(values);
} else if (values.phase !== undefined) {
  const run = { write: writeBank, fp32: searchFp32, sq4: searchSq4 }[values.phase];
  if (run === undefined) throw new Error(`unknown phase ${values.phase}`);
  printJson(await run());
} else {
  const log = (s: string): void => {
    if (values.json !== true) note(s);
  };
  log(
    `big bank: ${N} tokens × ${DIM} float32 (${((N * DIM * 4) / 1e9).toFixed(2)} GB) in ${values.dir}`,
  );
  try {
    const write = child('write');
    log(`  written in ${write.seconds!.toFixed(1)} s`);
    const fp32 = child('fp32');
    log(`  fp32 streamed search done`);
    const sq4 = child('sq4');
    const gb = (b: number): string => (b / 1e9).toFixed(2);
    if (values.json !== true) {
      out();
      out(`one query: ${ROWS} tokens, k = ${K}; each search in its own process`);
      printTable({
        head: ['search', 'tokens', 'bytes held / read', 'search s', 'peak RSS MB', 'recall@64'],
        rows: [
          [
            'write (streamed)',
            String(N),
            `${gb(write.bytes!)} GB written`,
            '',
            write.peakRssMb!.toFixed(0),
            '',
          ],
          [
            'fp32 file, exact',
            String(N),
            `${gb(fp32.bytesRead!)} GB read`,
            fp32.seconds!.toFixed(1),
            fp32.peakRssMb!.toFixed(0),
            '1 (reference)',
          ],
          [
            `sq4 in RAM (+${sq4.encodeSeconds!.toFixed(0)} s encode)`,
            String(N),
            `${gb(sq4.codeBytes!)} GB codes`,
            sq4.seconds!.toFixed(1),
            sq4.peakRssMb!.toFixed(0),
            sq4.recall!.toFixed(4),
          ],
        ],
      });
    }
    printJson({ tokens: N, dim: DIM, rows: ROWS, k: K, write, fp32, sq4 });
  } finally {
    if (values.keep !== true) rmSync(values.dir, { recursive: true, force: true });
  }
}
