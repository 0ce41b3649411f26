// bench:big-bank --ivf-large, phase 3: the index searched from its file, resident.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { IvfTokenIndex, OrtSimilarityKernel, type TokenHits } from '@bfe/index';
import { median, quantile } from '../shared/stats.js';
import { peakRssMb } from '../shared/machine.js';
import { note } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';
import { recallOf } from './ivf-tokens.js';
import { K, folderOf, indexName, sideOf } from './ivf-large-files.js';

const f32 = (path: string): Float32Array => {
  const b = readFileSync(path);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};
const i32 = (path: string): Int32Array => {
  const b = readFileSync(path);
  return new Int32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
};

/** One setting's figures (phase 3). */
export interface SearchResult {
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
export async function searchPhase(o: BigBankOptions): Promise<Record<string, unknown>> {
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
