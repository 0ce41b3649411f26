/**
 * `pnpm bench:big-bank --ivf-grow`: the clustered index as a store keeps it. On the first
 * `--tokens` real token states of `--bank` (memories of 128 tokens): an index trained on the first
 * half of the memories, the second half appended `--grow-batch` memories at a time (each token
 * assigned to its nearest centroid, coded with the first half's codebook), every tenth memory then
 * deleted (tombstones), and the index compacted (re-clustered when the drift passes its
 * threshold). Beside it, in the same run: an index trained on every memory with the same
 * settings, and the exact fp32 top-64 of the same queries (over the live memories once some are
 * deleted). Per stage: seconds, tokens per second, the drift, p50 of one query and token recall@64.
 *
 *   pnpm bench:big-bank --ivf-grow --bank <LongMemEval-S bank>,<LoCoMo bank> --tokens 2000000 \
 *     --rows 32 --queries 10 --centroids 4096 --residual-bits 4 --nprobe 16 --over-fetch 2
 */
import { loadavg } from 'node:os';
import {
  ExactTokenIndex,
  IvfTokenIndex,
  OrtSimilarityKernel,
  encodeTokens,
  flatTokenStore,
  trainCodec,
  type CodecSide,
  type TokenHits,
} from '@bfe/index';
import { median } from '../shared/stats.js';
import { peakRssMb } from '../shared/machine.js';
import { note, printTable } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';
import { realTokens, recallOf } from './ivf-tokens.js';

const K = 64;

export async function runIvfGrowBench(o: BigBankOptions): Promise<void> {
  const { n, dim, vectors, memories, tokenOffsets, rows, query, describe } = await realTokens(o);
  note(`ivf grow bench: ${n} tokens × ${dim} (${describe}), load ${loadavg()[0]!.toFixed(2)}`);
  const kernel = new OrtSimilarityKernel();
  const model = trainCodec('fp32', vectors.subarray(0, dim), 1, dim);
  const codes = encodeTokens(model, vectors, n);
  const bytes = codes.byteLength / n;
  /** The side of the first `m` memories. */
  const sideOf = (m: number): CodecSide => ({
    model,
    codes: codes.subarray(0, tokenOffsets[m]! * bytes),
    tokenOffsets: tokenOffsets.subarray(0, m + 1),
  });
  const exact = new ExactTokenIndex({ tokens: flatTokenStore(vectors, dim), tokenOffsets }, kernel);
  const truthOver = async (live: Int32Array): Promise<TokenHits[]> => {
    const out: TokenHits[] = [];
    for (let i = 0; i < o.queries; i++)
      out.push(await exact.search(query(i), rows, K, { memories: live }));
    return out;
  };
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const truth = await truthOver(all);
  const params = {
    centroids: o.centroids[0]!,
    residualBits: o.residualBits[0] as 2 | 4,
    ...(o.ivfSample === undefined ? {} : { sample: o.ivfSample }),
    iterations: o.ivfIterations,
  };
  const search = { nprobe: o.nprobe[0]!, overFetch: o.overFetch[0]!, threads: o.ivfThreads[0]! };
  const ivfKernel = new OrtSimilarityKernel({ spin: false, threads: search.threads });
  const measure = async (index: IvfTokenIndex, live: Int32Array, want: TokenHits[]) => {
    const probe = index.withSearch(search, ivfKernel);
    await probe.search(query(0), rows, K, { memories: live }); // the scan workers start
    const ms: number[] = [];
    let recall = 0;
    for (let i = 0; i < o.queries; i++) {
      const t0 = performance.now();
      const hits = await probe.search(query(i), rows, K, { memories: live });
      ms.push(performance.now() - t0);
      recall += recallOf(hits, want[i]!) / o.queries;
    }
    return { p50: median(ms).toFixed(1), recall: recall.toFixed(4) };
  };
  const table: string[][] = [];
  const row = (
    stage: string,
    tokens: number,
    s: number,
    drift: string,
    m: { p50: string; recall: string },
  ) =>
    table.push([
      stage,
      String(tokens),
      s.toFixed(1),
      tokens === 0 ? '' : (tokens / s).toFixed(0),
      drift,
      m.p50,
      m.recall,
    ]);
  const timed = async <T>(f: () => Promise<T>): Promise<[T, number]> => {
    const t0 = performance.now();
    const value = await f();
    return [value, (performance.now() - t0) / 1000];
  };

  const [full, fullS] = await timed(() =>
    IvfTokenIndex.build(sideOf(memories), params, kernel, search),
  );
  row('trained on every memory (peer)', n, fullS, '1.00', await measure(full, all, truth));
  await full.close();

  const half = Math.floor(memories / 2);
  const [index, halfS] = await timed(() =>
    IvfTokenIndex.build(sideOf(half), params, kernel, search),
  );
  row('trained on the first half', tokenOffsets[half]!, halfS, '1.00', {
    p50: '',
    recall: '',
  });
  let appendS = 0;
  for (let m = half; m < memories; m += o.growBatch) {
    const next = Math.min(memories, m + o.growBatch);
    appendS += (await timed(() => index.append(sideOf(next))))[1];
  }
  const appended = n - tokenOffsets[half]!;
  row(
    `second half appended (${o.growBatch} memories a batch)`,
    appended,
    appendS,
    index.drift.toFixed(2),
    await measure(index, all, truth),
  );

  const deleted = all.filter((m) => m % 10 === 0);
  const live = all.filter((m) => m % 10 !== 0);
  const [, deleteS] = await timed(() => index.delete(deleted));
  const liveTruth = await truthOver(live);
  row(
    'every tenth memory deleted',
    0,
    deleteS,
    index.drift.toFixed(2),
    await measure(index, live, liveTruth),
  );
  const [compacted, compactS] = await timed(() => index.compact());
  row(
    `compacted (${compacted.reclustered ? 're-clustered' : 'laid out again'})`,
    live.reduce((t, m) => t + tokenOffsets[m + 1]! - tokenOffsets[m]!, 0),
    compactS,
    index.drift.toFixed(2),
    await measure(index, live, liveTruth),
  );
  await index.close();
  printTable({
    head: ['stage', 'tokens', 'seconds', 'tokens/s', 'drift', 'p50 ms', 'recall@64'],
    rows: table,
  });
  note(
    `C = ${params.centroids}, ${params.residualBits}-bit, nprobe ${search.nprobe}, over-fetch ${search.overFetch}, ` +
      `${search.threads} scan thread(s); ${o.queries} queries × ${rows} rows; peak RSS ${peakRssMb().toFixed(0)} MB`,
  );
}
