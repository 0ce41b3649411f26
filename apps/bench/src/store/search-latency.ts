/**
 * The search part of `pnpm bench:store`: one query at a time against bank views built from
 * LoCoMo's turns encoded with the store's embedder (see store.bench.ts for what is measured).
 */
import { loadavg } from 'node:os';
import type { LoadedDataset } from '@bfe/core';
import { SparseScorer } from '@bfe/scorer';
import {
  residentIndexFactory,
  searchView,
  type BankView,
  type Embedder,
  type EncodedTexts,
} from '@bfe/store';
import { note } from '../shared/table.js';
import { quantile } from '../shared/stats.js';
import { latencyBanks, ms, p50p90 as p, type LatencyOptions } from './latency-banks.js';

/** Table head of {@link searchLatency}'s rows. */
export const SEARCH_HEAD = [
  'bank',
  'memories',
  'tokens',
  'queries',
  'encode p50/p90 ms',
  'search p50/p90',
  'encode+search p50/p90',
  'no evidence p50/p90',
  'non-resident p50/p90',
  'bare scorer p50/p90',
  'search/bare p50',
  'load',
];

/** One row per bank: latencies of one query's encoding and search, and the bare scorer peer. */
export async function searchLatency(
  benchmark: LoadedDataset['benchmark'],
  embedder: Embedder,
  options: LatencyOptions,
): Promise<string[][]> {
  const { banks } = await latencyBanks(benchmark, embedder, options, 'search');
  const threads = options.threads === undefined ? {} : { threads: options.threads };
  const scorer = await SparseScorer.open(threads);
  const index = residentIndexFactory(threads);
  const out: string[][] = [];
  try {
    for (const { name, build, queries } of banks) {
      const view = build();
      const t = { encode: [] as number[], search: [] as number[], both: [] as number[] };
      const plain: number[] = [];
      const nonResident: number[] = [];
      const bare: number[] = [];
      let rotate = 0;
      // The first query warms the caches (resident session, tie order, bank checks): untimed.
      for (let qi = -1; qi < queries.length; qi++) {
        const t0 = performance.now();
        const query = await embedder.encode([queries[Math.max(0, qi)]!], 'query');
        const encodeMs = ms(t0);
        const calls: Array<[number[] | 'search', () => Promise<unknown>]> = [
          ['search', () => searchView(view, query, { k: 10, index }, scorer)],
          [plain, () => searchView(view, query, { k: 10, index, explain: false }, scorer)],
          [nonResident, () => searchView(view, query, { k: 10 }, scorer)],
          [bare, () => scorer.score(bareRequest(view, query), bareOptions)],
        ];
        // Rotate the order per query, so no call always runs first after the encoder.
        for (let c = 0; c < calls.length; c++) {
          const [into, call] = calls[(c + rotate) % calls.length]!;
          const t1 = performance.now();
          await call();
          const took = ms(t1);
          if (qi < 0) continue;
          if (into !== 'search') into.push(took);
          else {
            t.search.push(took);
            t.encode.push(encodeMs);
            t.both.push(encodeMs + took);
          }
        }
        rotate += 1;
        // The warm-up's second indexed search started the resident build: measure it ready.
        if (qi < 0) await index.settled();
      }
      const row = [
        name,
        String(view.ids.length),
        String(view.tokenOffsets[view.ids.length]),
        String(queries.length),
        p(t.encode),
        p(t.search),
        p(t.both),
        p(plain),
        p(nonResident),
        p(bare),
        `${(quantile(t.search, 0.5) / quantile(bare, 0.5)).toFixed(2)}×`,
        loadavg()[0]!.toFixed(2),
      ];
      note(row.join(' | '));
      out.push(row);
    }
  } finally {
    await index.dispose();
    await scorer.dispose();
  }
  return out;
}

const bareOptions = { k: 64, alpha: 0.5, maxsim: false, clampK: true };

/** The scorer request a search makes, minus ranking and evidence (the peer). */
function bareRequest(view: BankView, query: EncodedTexts) {
  return {
    memories: {
      dim: view.dim,
      tokenVectors: view.tokenVectors,
      tokenOffsets: view.tokenOffsets,
      pooled: view.pooled,
      ids: view.ids,
    },
    queries: query,
    queryRows: [0],
    candidates: Array.from(view.ids, (_, i) => i),
  };
}
