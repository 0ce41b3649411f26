/**
 * `pnpm bench:big-bank --ivf`: the clustered residual backend (`IvfTokenIndex`) beside the exact
 * fp32 backend in the same run, on the first `--tokens` real token states of `--bank` (one or
 * more encoded banks, concatenated in the order given: LongMemEval-S then LoCoMo for 2e6
 * MiniLM tokens). One query = `--rows` real query token states of the first bank, k = 64, every
 * memory a candidate. Per (centroids, residual bits): the build's seconds and bytes per token;
 * per nprobe: p50 / p90 of one query, token recall@64 against the exact top-64 of the same
 * query, the time split (centroid scoring, scan, float64 rescoring) and the scan's tokens
 * scored per second (wall and CPU) against the machine's peak (78 GFLOP/s fp32, 15.7 GB/s read).
 * Per `--ivf-threads` count (the threads of one search: its scan threads, and as many
 * onnxruntime threads for its centroid product, so a one-thread row is one core's, as the faiss
 * peers' are): the same, the settings searched interleaved query by query, with each count's p50
 * ratio to the first and whether the hits are byte for byte the same across counts. With
 * `--ivf-peers`, a line per bfe setting names the fastest peer at its recall on as many threads
 * (`ivf-equal-recall.ts`: read off the peer's speed–recall envelope). Per index, two lines
 * (`ivf-kernel-line.ts`): the fast scan alone against the peak, and a row's probe order alone,
 * the module's sampled-threshold selection against its insertion over the whole row.
 *
 *   pnpm bench:big-bank --ivf --bank <LongMemEval-S bank>,<LoCoMo bank> --tokens 2000000 \
 *     --rows 32 --queries 20 --centroids 4096 --residual-bits 2,4 --nprobe 4,8,16,32,64
 *     [--over-fetch 1,2,4] [--ivf-threads 1,2]
 *     [--graphs <dir>: each index saved there once built (named by its settings), read back after]
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { equalRecallLines, type RunResult } from './ivf-equal-recall.js';
import { runFaissPeers } from './ivf-peers.js';
import { PEAK_GBS, PEAK_GFLOPS, probeOrderLine, scanKernelLine } from './ivf-kernel-line.js';
import { sameFiltered, sameHits } from './ivf-threads.js';
import { parallelHeadroom } from './parallel-headroom.js';
import { realTokens, recallOf } from './ivf-tokens.js';
import {
  DEFAULT_MAX_PROBE,
  ExactTokenIndex,
  IvfTokenIndex,
  OrtSimilarityKernel,
  codeBytes,
  encodeTokens,
  flatTokenStore,
  trainCodec,
  type TokenHits,
} from '@bfe/index';
import { median, quantile } from '../shared/stats.js';
import { cpuSimd, peakRssMb } from '../shared/machine.js';
import { note, out, printJson, printTable } from '../shared/table.js';
import type { BigBankOptions } from './big-bank-cli.js';

const K = 64;

/**
 * The index of `(n, centroids, bits)`: read from `<dir>/ivf-<n>-<centroids>-<bits>.bin` when
 * `dir` holds it (with the build's seconds beside it, `.json`), else built and, given `dir`,
 * saved there.
 */
async function builtOrSaved(
  dir: string | undefined,
  n: number,
  centroids: number,
  bits: 2 | 4,
  /** The other build settings, part of the saved file's name. */
  settings: string,
  build: () => Promise<IvfTokenIndex>,
  read: (bytes: Uint8Array) => IvfTokenIndex,
): Promise<{ index: IvfTokenIndex; buildS: number }> {
  const base =
    dir === undefined ? undefined : join(dir, `ivf-${n}-${centroids}-${bits}-${settings}`);
  if (base !== undefined && existsSync(`${base}.bin`)) {
    const meta = JSON.parse(readFileSync(`${base}.json`, 'utf8')) as { buildSeconds: number };
    return { index: read(new Uint8Array(readFileSync(`${base}.bin`))), buildS: meta.buildSeconds };
  }
  const t0 = performance.now();
  const index = await build();
  const buildS = (performance.now() - t0) / 1000;
  if (base !== undefined) {
    mkdirSync(dir!, { recursive: true });
    writeFileSync(`${base}.bin`, index.toBytes());
    writeFileSync(`${base}.json`, `${JSON.stringify({ buildSeconds: buildS })}\n`);
  }
  return { index, buildS };
}

export async function runIvfBench(o: BigBankOptions): Promise<void> {
  const { n, dim, vectors, memories, tokenOffsets, rows, query, queries, describe } =
    await realTokens(o);
  note(`ivf bench: ${n} tokens × ${dim} (${describe})`);
  const all = Int32Array.from({ length: memories }, (_, m) => m);
  const kernel = new OrtSimilarityKernel();
  // The ivf search's centroid product, per scan thread count: as many onnxruntime threads as
  // the search's scan threads (a one-thread row is one thread throughout, as the faiss peers
  // are), idle ones not spinning, so they leave the cores to the scan that follows.
  const ivfKernels = new Map(
    o.ivfThreads.map((threads) => [threads, new OrtSimilarityKernel({ spin: false, threads })]),
  );

  const exact = new ExactTokenIndex({ tokens: flatTokenStore(vectors, dim), tokenOffsets }, kernel);
  const truth: TokenHits[] = [];
  const exactMs: number[] = [];
  for (let i = 0; i < o.queries; i++) {
    const t0 = performance.now();
    truth.push(await exact.search(query(i), rows, K, { memories: all }));
    exactMs.push(performance.now() - t0);
  }
  note(`  exact: p50 ${median(exactMs).toFixed(1)} ms`);

  const model = trainCodec('fp32', vectors.subarray(0, dim), 1, dim);
  const side = { model, codes: encodeTokens(model, vectors, n), tokenOffsets };
  const table: string[][] = [
    [
      'exact fp32',
      '',
      '',
      '',
      '',
      '1536',
      '',
      median(exactMs).toFixed(1),
      quantile(exactMs, 0.9).toFixed(1),
      '1 (reference)',
      '',
      '',
      '',
    ],
  ];
  const json: object[] = [
    { backend: 'exact', p50Ms: median(exactMs), p90Ms: quantile(exactMs, 0.9) },
  ];
  const kernelLines: string[] = [];
  const threadLines: string[] = [];
  for (const centroids of o.centroids) {
    for (const bits of o.residualBits) {
      const { index, buildS } = await builtOrSaved(
        o.graphs,
        n,
        centroids,
        bits as 2 | 4,
        `sample-${o.ivfSample ?? 'default'}-iterations-${o.ivfIterations}`,
        () =>
          IvfTokenIndex.build(
            side,
            {
              centroids,
              residualBits: bits as 2 | 4,
              ...(o.ivfSample === undefined ? {} : { sample: o.ivfSample }),
              iterations: o.ivfIterations,
            },
            kernel,
            { nprobe: 1 },
          ),
        (bytes) => IvfTokenIndex.fromBytes(bytes, side, kernel, { nprobe: 1 }),
      );
      const bytes = index.toBytes().byteLength;
      const perToken = bytes / n;
      note(
        `  ivf C=${centroids} ${bits}-bit: built in ${buildS.toFixed(0)} s, ${perToken.toFixed(1)} B/token`,
      );
      kernelLines.push(scanKernelLine(index, bits as 2 | 4, query(0), dim));
      const probeRows = Float32Array.from([0, 1, 2, 3].flatMap((i) => Array.from(query(i))));
      kernelLines.push(
        await probeOrderLine(
          index,
          kernel,
          probeRows,
          dim,
          [...o.nprobe, DEFAULT_MAX_PROBE].sort((a, b) => a - b),
        ),
      );
      for (const nprobe of o.nprobe) {
        for (const [overFetch, slack] of o.overFetch.flatMap((f) =>
          o.ivfProbeSlack.map((sl) => [f, sl] as const),
        )) {
          const adaptive =
            slack === 'none'
              ? {}
              : { probeSlack: slack, maxProbe: Math.max(o.ivfMaxProbe, nprobe) };
          const probeName =
            slack === 'none' ? String(nprobe) : `${nprobe}, slack ${slack} ≤ ${adaptive.maxProbe}`;
          const settings = o.ivfCentroidProduct.flatMap((product) =>
            o.ivfThreads.map((threads) => ({
              threads,
              product,
              probe: index.withSearch(
                { nprobe, overFetch, threads, centroidProduct: product, ...adaptive },
                ivfKernels.get(threads)!,
              ),
              ms: [] as number[],
              split: {
                centroid: 0,
                scan: 0,
                scanCpu: 0,
                rescore: 0,
                scored: 0,
                probed: 0,
                workerRows: 0,
              },
              recall: 0,
            })),
          );
          // One unmeasured search each: the scan workers start.
          for (const s of settings) await s.probe.search(query(0), rows, K, { memories: all });
          let identical = true;
          for (let n = 0; n < o.queries * o.ivfReps; n++) {
            // Every query once a pass, `--ivf-reps` passes: recall from the first.
            const i = n % o.queries;
            const measured = n < o.queries;
            // Per centroid product, the first setting's hits (threads never change them).
            const first = new Map<string, TokenHits>();
            // Interleaved, each query in a rotated order of the settings.
            for (let j = 0; j < settings.length; j++) {
              const setting = settings[(i + j) % settings.length]!;
              const { probe, split } = setting;
              const t1 = performance.now();
              const hits = await probe.search(query(i), rows, K, { memories: all });
              setting.ms.push(performance.now() - t1);
              if (measured) setting.recall += recallOf(hits, truth[i]!) / o.queries;
              const same = first.get(setting.product);
              if (same === undefined) first.set(setting.product, hits);
              else identical &&= sameHits(hits, same);
              const s = probe.stats!;
              split.centroid += s.centroidSeconds;
              split.scan += s.scanSeconds;
              split.scanCpu += s.scanCpuSeconds;
              split.rescore += s.rescoreSeconds;
              split.scored += s.tokensScored;
              split.probed += s.clustersProbed;
              split.workerRows += s.workerRows;
            }
          }
          for (const { threads, product, ms, split, recall } of settings) {
            const perSecond = split.scored / split.scan;
            const perCpuSecond = split.scored / split.scanCpu;
            const cpuGflops = (perCpuSecond * 2 * dim) / 1e9;
            const gflops = (perSecond * 2 * dim) / 1e9;
            const gbs = (perSecond * (codeBytes(dim, bits as 2 | 4) + 4)) / 1e9;
            const q = o.queries * o.ivfReps;
            table.push([
              `ivf ${bits}-bit${product === 'int8' ? ', int8 centroids' : ''}`,
              String(centroids),
              probeName,
              String(overFetch),
              String(threads),
              perToken.toFixed(1),
              buildS.toFixed(0),
              median(ms).toFixed(1),
              quantile(ms, 0.9).toFixed(1),
              recall.toFixed(4),
              `${((split.centroid / q) * 1e3).toFixed(1)} / ${((split.scan / q) * 1e3).toFixed(1)} / ${((split.rescore / q) * 1e3).toFixed(1)}`,
              `${(perSecond / 1e6).toFixed(1)}M (${((gflops / PEAK_GFLOPS) * 100).toFixed(1)} % flop, ${((gbs / PEAK_GBS) * 100).toFixed(1)} % read)`,
              `${(perCpuSecond / 1e6).toFixed(1)}M (${((cpuGflops / PEAK_GFLOPS) * 100).toFixed(1)} % flop)`,
            ]);
            json.push({
              backend: 'ivf',
              centroids,
              residualBits: bits,
              nprobe,
              ...adaptive,
              overFetch,
              threads,
              centroidProduct: product,
              bytesPerToken: perToken,
              buildSeconds: buildS,
              p50Ms: median(ms),
              p90Ms: quantile(ms, 0.9),
              recall,
              centroidMs: (split.centroid / q) * 1e3,
              scanMs: (split.scan / q) * 1e3,
              rescoreMs: (split.rescore / q) * 1e3,
              tokensScoredPerQuery: split.scored / q,
              clustersProbedPerRow: split.probed / (q * rows),
              workerRowsPerQuery: split.workerRows / q,
              tokensPerSecond: perSecond,
              tokensPerCpuSecond: perCpuSecond,
              cpuEquivalentGflops: cpuGflops,
              equivalentGflops: gflops,
              codeGBs: gbs,
              identicalAcrossThreads: identical,
            });
            note(
              `    nprobe ${probeName}, over-fetch ${overFetch}, ${threads} thread(s), ${product} centroids: p50 ${median(ms).toFixed(1)} ms, recall ${recall.toFixed(4)}, ${(split.scored / q / 1e3).toFixed(0)}k tokens and ${(split.probed / (q * rows)).toFixed(1)} clusters a row scanned`,
            );
          }
          for (const product of o.ivfCentroidProduct) {
            const probes = settings.filter((t) => t.product === product).map((t) => t.probe);
            if (probes.length < 2) continue;
            identical &&= await sameFiltered(probes, query, Math.min(3, o.queries), rows, memories);
          }
          const headroom = o.ivfThreads.length > 1 ? await parallelHeadroom() : 1;
          for (const s of settings.filter((t) => t.threads !== o.ivfThreads[0])) {
            const base = settings.find((t) => t.product === s.product)!;
            threadLines.push(
              `${bits}-bit nprobe ${probeName} over-fetch ${overFetch}, ${s.product} centroids: p50 ${median(base.ms).toFixed(1)} ms on ${base.threads} ` +
                `thread(s), ${median(s.ms).toFixed(1)} ms on ${s.threads}: ×${(median(base.ms) / median(s.ms)).toFixed(2)} ` +
                `(worker rows ${(s.split.workerRows / (o.queries * o.ivfReps)).toFixed(1)} of ${rows} a query); hits ` +
                `${identical ? 'identical' : 'DIFFER'} across threads (and with filters); a parallel loop's ×${headroom.toFixed(2)} ` +
                `on 2 threads just after; load average ${loadavg()
                  .map((l) => l.toFixed(2))
                  .join(' ')}`,
            );
          }
        }
      }
      await index.close();
    }
  }
  await kernel.dispose();
  for (const k of ivfKernels.values()) await k.dispose();
  if (o.ivfPeers === true) {
    const peers = runFaissPeers(o, vectors, queries, truth, dim);
    for (const p of peers.indexes) {
      const graph = p.name.startsWith('HNSW');
      table.push([
        `faiss ${p.name}`,
        graph ? '' : String(peers.nlist),
        graph ? `ef ${p.nprobe}` : String(p.nprobe),
        '',
        String(p.threads),
        p.bytes_per_token.toFixed(1),
        p.build_s.toFixed(0),
        p.p50_ms.toFixed(1),
        p.p90_ms.toFixed(1),
        p.recall.toFixed(4),
        '',
        '',
        '',
      ]);
      json.push({ backend: `faiss ${p.name}`, faiss: peers.faiss, ...p });
    }
  }
  const cpu = cpuSimd();
  if (o.json !== true) {
    out();
    out(
      `${n} real MiniLM tokens; one query = ${rows} rows, k = ${K}, ${o.queries} queries (${o.ivfReps} passes); recall@64 against exact fp32 in this run; ${cpu}`,
    );
    out(
      'B/token: the IVF bytes (codes, token ids, centroids, buckets, offsets); the rescoring reads the fp32 vectors (1536 B/token) beside them',
    );
    printTable({
      head: [
        'backend',
        'centroids',
        'nprobe',
        'overFetch',
        'threads',
        'B/token',
        'build s',
        'p50 ms',
        'p90 ms',
        'recall@64',
        'centroids / scan / rescore ms',
        'scan tokens/s',
        'scan tokens/CPU-s',
      ],
      rows: table,
    });
    for (const line of kernelLines) out(line);
    for (const line of threadLines) out(line);
    for (const line of equalRecallLines(json as RunResult[])) out(line);
  }
  printJson({
    tokens: n,
    dim,
    rows,
    k: K,
    queries: o.queries,
    passes: o.ivfReps,
    peakRssMb: peakRssMb(),
    cpu,
    results: json,
  });
}
