/**
 * bfe's side of one `pnpm bench:scorer` size, in its own process (so its peak RSS is its own).
 * Usage: `node --conditions=@bfe/source --import tsx apps/bench/src/scorer/scorer-worker.ts
 * <job.json>`; the parent, `scorer.bench.ts`, writes the job and reads the result file.
 */
import { exactTopK, flatBankSource, OrtSimilarityKernel, type BankChunkSource } from '@bfe/index';
import { SparseScorer } from '@bfe/scorer';
import { machineBusySeconds, ownCpuSeconds, peakRssMb, rssMb } from '../shared/machine.js';
import {
  readJob,
  writeResult,
  type BfeResult,
  type LatencyJob,
  type RunTimes,
  type ScorerBenchJob,
} from './protocol.js';
import { synthetic, syntheticInto } from './synthetic.js';

async function main(): Promise<void> {
  const jobFile = process.argv[2];
  if (jobFile === undefined) throw new Error('usage: scorer-worker.ts <job.json>');
  const job = await readJob(jobFile);
  try {
    await writeResult(job.resultFile, await run(job));
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await writeResult(job.resultFile, { ok: false, error: message });
    process.exitCode = 1;
  }
}

/** The pool-backed bank of the job protocol; `untimed` accumulates chunk preparation. */
class StreamedBank implements BankChunkSource {
  readonly size: number;
  readonly dim: number;
  untimed = 0;
  readonly #pool: Float32Array;
  readonly #poolSize: number;
  readonly #scratch: Float32Array;

  constructor(pool: Float32Array, poolSize: number, size: number, dim: number, chunk: number) {
    this.size = size;
    this.dim = dim;
    this.#pool = pool;
    this.#poolSize = poolSize;
    this.#scratch = new Float32Array(chunk * dim);
  }

  read(start: number, end: number): Float32Array {
    const t = performance.now();
    const dim = this.dim;
    const cycle = Math.floor(start / this.#poolSize);
    const at = start % this.#poolSize;
    if (at + (end - start) > this.#poolSize) throw new Error('chunk crosses the pool boundary');
    const src = this.#pool.subarray(at * dim, (at + end - start) * dim);
    const out = cycle === 0 ? src : this.#scratch.subarray(0, src.length);
    if (cycle > 0) rollRows(out, src, end - start, dim, cycle % dim);
    this.untimed += performance.now() - t;
    return out;
  }

  dots(
    indices: Int32Array,
    from: number,
    count: number,
    query: Float32Array,
    at: number,
    out: Float64Array,
  ): void {
    const dim = this.dim;
    const pool = this.#pool;
    for (let h = 0; h < count; h++) {
      const index = indices[from + h]!;
      const row = (index % this.#poolSize) * dim;
      const c = Math.floor(index / this.#poolSize) % dim;
      let s = 0;
      for (let j = 0; j < dim; j++) s += pool[row + ((j + c) % dim)]! * query[at + j]!;
      out[h] = s;
    }
  }
}

/** `out[i][j] = src[i][(j + c) mod dim]` (numpy's `np.roll(src, -c, axis=1)`). */
function rollRows(out: Float32Array, src: Float32Array, n: number, dim: number, c: number): void {
  for (let i = 0; i < n; i++) {
    const a = i * dim;
    out.set(src.subarray(a + c, a + dim), a);
    out.set(src.subarray(a, a + c), a + dim - c);
  }
}

async function run(job: ScorerBenchJob): Promise<BfeResult> {
  const { dim, size, k, chunkSize } = job;
  const kernel = new OrtSimilarityKernel({ threads: job.threads });
  const baseRssMb = rssMb();
  const t0 = performance.now();
  const poolSize = Math.min(size, job.pool);
  const pool = new Float32Array(poolSize * dim);
  for (let a = 0; a < poolSize; a += chunkSize) {
    const n = Math.min(chunkSize, poolSize - a);
    syntheticInto(pool.subarray(a * dim, (a + n) * dim), a, n, dim, job.seed);
  }
  const maxRows = Math.max(...job.rows);
  const queries = synthetic(maxRows, dim, job.querySeed);
  const generationSeconds = (performance.now() - t0) / 1000;
  const streamed = size > job.pool;
  const bank = streamed ? new StreamedBank(pool, job.pool, size, dim, chunkSize) : undefined;
  const source = bank ?? flatBankSource(pool, dim);

  const runs: RunTimes[] = [];
  let indices: number[][] = [];
  let passes = 0;
  for (const rows of job.rows) {
    const q = queries.subarray(0, rows * dim);
    const search = () => exactTopK(kernel, q, rows, source, { k, chunkSize });
    await search(); // warm-up: sessions, arena, thread pool
    const seconds: number[] = [];
    const other: number[] = [];
    const startAll = performance.now();
    while (
      seconds.length < job.repeat ||
      (performance.now() - startAll < job.minSeconds * 1000 && seconds.length < 50)
    ) {
      const busy0 = machineBusySeconds();
      const cpu0 = ownCpuSeconds();
      if (bank !== undefined) bank.untimed = 0;
      const t = performance.now();
      const top = await search();
      seconds.push((performance.now() - t - (bank?.untimed ?? 0)) / 1000);
      const busy1 = machineBusySeconds();
      if (busy0 !== null && busy1 !== null) {
        other.push(Math.max(0, busy1 - busy0 - (ownCpuSeconds() - cpu0)));
      }
      passes = top.passes;
      if (indices.length === 0) {
        indices = Array.from({ length: Math.min(job.sampleRows, rows) }, (_, r) =>
          Array.from(top.indices.subarray(r * top.k, (r + 1) * top.k)),
        );
      }
    }
    runs.push({ rows, seconds, otherCpuSeconds: other });
  }
  const latencyMs = job.latency === undefined ? null : await latency(job.latency, job, kernel);
  const peak = peakRssMb();
  await kernel.dispose();
  return {
    ok: true,
    peers: { bfe: { runs, indices } },
    latencyMs,
    generationSeconds,
    baseRssMb,
    peakRssMb: peak,
    passes,
    versions: { node: process.version },
  };
}

async function latency(
  lat: LatencyJob,
  job: ScorerBenchJob,
  kernel: OrtSimilarityKernel,
): Promise<Record<string, number[]>> {
  const { dim, k } = job;
  const bank = synthetic(lat.bankTokens, dim, lat.seed);
  const q = synthetic(lat.queryTokens, dim, lat.seed + 1);
  const memories = Math.ceil(lat.bankTokens / lat.memoryTokens);
  const tokenOffsets = Int32Array.from({ length: memories + 1 }, (_, i) =>
    Math.min(lat.bankTokens, i * lat.memoryTokens),
  );
  const request = {
    memories: {
      dim,
      tokenVectors: bank,
      tokenOffsets,
      pooled: synthetic(memories, dim, lat.seed + 2),
    },
    queries: {
      dim,
      tokenVectors: q,
      tokenOffsets: Int32Array.of(0, lat.queryTokens),
      pooled: synthetic(1, dim, lat.seed + 3),
    },
    queryRows: [0],
    candidates: Int32Array.from({ length: memories }, (_, i) => i),
  };
  const single = new OrtSimilarityKernel({ threads: 1 });
  const noSpin = new OrtSimilarityKernel({ threads: job.threads, spin: false });
  const scorer = await SparseScorer.open({ kernel });
  const source = flatBankSource(bank, dim);
  // A fixed memory store: the bank made resident (pre-packed once by onnxruntime).
  const resident = new OrtSimilarityKernel({ threads: job.threads });
  await resident.makeResident(bank, lat.bankTokens, dim);
  const cases: Record<string, () => Promise<unknown>> = {
    [`bfe exactTopK (${job.threads} threads)`]: () =>
      exactTopK(kernel, q, lat.queryTokens, source, { k }),
    'bfe exactTopK (1 thread)': () => exactTopK(single, q, lat.queryTokens, source, { k }),
    [`bfe exactTopK (${job.threads} threads, no spinning)`]: () =>
      exactTopK(noSpin, q, lat.queryTokens, source, { k }),
    [`bfe kernel call alone: Gemm+TopK(${k + 16})`]: () =>
      kernel.topK(q, lat.queryTokens, bank, lat.bankTokens, dim, k + 16),
    [`bfe exactTopK, resident bank (${job.threads} threads)`]: () =>
      exactTopK(resident, q, lat.queryTokens, source, { k }),
    [`bfe kernel call alone, resident bank: Gemm+TopK(${k + 16})`]: () =>
      resident.topK(q, lat.queryTokens, bank, lat.bankTokens, dim, k + 16),
    'bfe SparseScorer.score, maxsim off': () => scorer.score(request, { k, maxsim: false }),
    'bfe SparseScorer.score, maxsim on': () => scorer.score(request, { k, maxsim: true }),
  };
  const out: Record<string, number[]> = {};
  for (const [name, fn] of Object.entries(cases)) {
    for (let i = 0; i < lat.warmup; i++) await fn();
    const ms: number[] = [];
    for (let i = 0; i < lat.runs; i++) {
      const t = performance.now();
      await fn();
      ms.push(performance.now() - t);
    }
    out[name] = ms;
  }
  if (resident.residentHits === 0) throw new Error('the resident bank was never used');
  await single.dispose();
  await noSpin.dispose();
  await resident.dispose();
  return out;
}

await main();
