/**
 * The `latency` step of the `scale` part (scale-bench.ts): search p50/p90 in the store's largest
 * bank through its HNSW graph and with an exact index, the query encodings replayed.
 */
import { loadavg } from 'node:os';
import { rng } from '@bfe/index/testing';
import { MemoryStore, storeIndexFactory } from '@bfe/store';
import { quantile } from '../shared/stats.js';
import { note } from '../shared/table.js';
import { poolEmbedder, type EncodedPool } from './scale-pool.js';

const load = (): string => loadavg()[0]!.toFixed(2);
const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** Search p50/p90 in the latency bank: through its HNSW graph (built first), then exact. */
export async function latency(
  o: { readonly seed: number; readonly queries: number; readonly cacheBytes: number },
  dir: string,
  bank: string,
  queryPool: EncodedPool,
): Promise<string[][]> {
  const rand = rng(o.seed + 2);
  const texts = Array.from(
    { length: o.queries },
    () => queryPool.texts[Math.floor(rand() * queryPool.texts.length)]!,
  );
  const embedder = poolEmbedder(undefined, queryPool);
  const out: string[][] = [];
  let hnswP50 = 0;
  for (const exact of [false, true]) {
    // The graph's worker at nice 0 (default 10, for writes to come first): no writes run here.
    const index = storeIndexFactory({ exact, hnsw: { workerNice: 0 } });
    const store = await MemoryStore.open(dir, { embedder, index, cacheBytes: o.cacheBytes });
    try {
      const t0 = performance.now();
      await store.search({ bank, query: texts[0]!, k: 10 }); // starts the graph build
      await index.graphsSettled();
      const readyS = (performance.now() - t0) / 1000;
      const bankTokens = (await store.stats()).banks[bank]!.tokens;
      const opened = index.graphStats().opened[bank];
      // A small run's bank may stay under the HNSW threshold: searched resident and exact.
      const policy = exact
        ? 'exact index'
        : opened === undefined
          ? 'no graph (small)'
          : 'HNSW graph';
      note(`scale: ${exact ? 'exact' : `graph ${opened}`} ready after ${readyS.toFixed(1)} s`);
      const ms: number[] = [];
      for (const query of texts) {
        const t = performance.now();
        await store.search({ bank, query, k: 10, system: 'sparse-fusion' });
        ms.push(performance.now() - t);
      }
      const p50 = quantile(ms, 0.5);
      if (!exact) hnswP50 = p50;
      out.push([
        `search p50 / p90, bank ${bank}, ${policy}`,
        `${p50.toFixed(1)} / ${quantile(ms, 0.9).toFixed(1)} ms`,
        '',
        `${(await store.stats()).banks[bank]!.memories} memories, ${int(bankTokens)} tokens, ` +
          `${o.queries} queries, sparse-fusion k 10, query encoding excluded (replayed); ` +
          (exact
            ? `exact/HNSW p50 ${(p50 / hnswP50).toFixed(1)}×`
            : `first search + graph ${opened ?? 'none'} (worker nice 0) ${readyS.toFixed(1)} s ` +
              `(${int(bankTokens / readyS)} tokens/s)`),
        load(),
      ]);
    } finally {
      await store.close({ flush: false });
    }
  }
  return out;
}
