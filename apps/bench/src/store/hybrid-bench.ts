/**
 * The `hybrid` part of `pnpm bench:store`: one query at a time, the store's `hybrid` search
 * (pooled + sparse + BM25, METHOD.md §8) beside `sparse-fusion` (the peer) on the same bank
 * views and queries, and what its lexical index costs: deriving a bank's BM25 postings from
 * its texts (a store does it at a bank's first hybrid search) and keeping them through adds.
 */
import { loadavg } from 'node:os';
import type { LoadedDataset } from '@bfe/core';
import { SparseScorer } from '@bfe/scorer';
import {
  lexiconOfView,
  residentIndexFactory,
  searchView,
  type BankView,
  type Embedder,
} from '@bfe/store';
import { note } from '../shared/table.js';
import { quantile } from '../shared/stats.js';
import { latencyBanks, ms, p50p90 as p, type LatencyOptions } from './latency-banks.js';

/** BM25's language of the measured store (LoCoMo is English, as the experiments' BM25). */
const LANGUAGE = 'english';
/** Memories put into (then deleted from) a bank's kept postings to time their upkeep. */
const UPKEEP = 256;

/** Table head of {@link hybridLatency}'s rows. */
export const HYBRID_HEAD = [
  'bank',
  'memories',
  'queries',
  'postings build ms',
  'put µs/memory',
  'sparse-fusion p50/p90 ms',
  'hybrid p50/p90',
  'hybrid/sparse-fusion p50',
  'no evidence: sparse-fusion',
  'no evidence: hybrid',
  'load',
];

/** One row per bank: hybrid's and sparse fusion's search latencies, and the postings' costs. */
export async function hybridLatency(
  benchmark: LoadedDataset['benchmark'],
  embedder: Embedder,
  options: LatencyOptions,
): Promise<string[][]> {
  const { banks, texts } = await latencyBanks(benchmark, embedder, options, 'hybrid');
  const threads = options.threads === undefined ? {} : { threads: options.threads };
  const scorer = await SparseScorer.open(threads);
  const index = residentIndexFactory(threads);
  const out: string[][] = [];
  try {
    for (const { name, build, queries } of banks) {
      const plain = build();
      // The postings a store derives at the bank's first hybrid search, then keeps.
      const t0 = performance.now();
      const postings = lexiconOfView(plain, LANGUAGE);
      const buildMs = ms(t0);
      const view: BankView = {
        ...plain,
        lexicon: { language: LANGUAGE, forView: () => postings },
      };
      const t1 = performance.now();
      for (let i = 0; i < UPKEEP; i++) postings.put(`upkeep-${i}`, -1, texts[i % texts.length]!);
      const putUs = (ms(t1) * 1000) / UPKEEP;
      for (let i = 0; i < UPKEEP; i++) postings.delete(`upkeep-${i}`);
      const times = { sparse: [] as number[], hybrid: [] as number[] };
      const bare = { sparse: [] as number[], hybrid: [] as number[] };
      let rotate = 0;
      // The first query warms the caches (resident session, tie order): untimed.
      for (let qi = -1; qi < queries.length; qi++) {
        const text = queries[Math.max(0, qi)]!;
        const query = await embedder.encode([text], 'query');
        const hybrid = { system: 'hybrid', queryText: text } as const;
        const calls: Array<[number[], () => Promise<unknown>]> = [
          [times.sparse, () => searchView(view, query, { k: 10, index }, scorer)],
          [times.hybrid, () => searchView(view, query, { k: 10, index, ...hybrid }, scorer)],
          [bare.sparse, () => searchView(view, query, { k: 10, index, explain: false }, scorer)],
          [
            bare.hybrid,
            () => searchView(view, query, { k: 10, index, explain: false, ...hybrid }, scorer),
          ],
        ];
        // Rotate the order per query, so no call always runs first after the encoder.
        for (let c = 0; c < calls.length; c++) {
          const [into, call] = calls[(c + rotate) % calls.length]!;
          const t2 = performance.now();
          await call();
          if (qi >= 0) into.push(ms(t2));
        }
        rotate += 1;
        if (qi < 0) await index.settled();
      }
      const row = [
        name,
        String(view.ids.length),
        String(queries.length),
        buildMs.toFixed(1),
        putUs.toFixed(1),
        p(times.sparse),
        p(times.hybrid),
        `${(quantile(times.hybrid, 0.5) / quantile(times.sparse, 0.5)).toFixed(2)}×`,
        p(bare.sparse),
        p(bare.hybrid),
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
