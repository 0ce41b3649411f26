/**
 * `bench:search-floor`'s second part: a whole `MemoryStore.search` in this process, on one
 * thread (the encoder and the kernels as the floor runs them), with and without `explain` — what a
 * search costs beyond its two model runs before any HTTP, worker hop or JSON.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, storeIndexFactory, type Embedder } from '@bfe/store';
import { cpuMsSince } from '../shared/machine.js';

/** One conversation's turns (its bank) and its questions (text only, never labels). */
export interface FloorBank {
  readonly bank: string;
  readonly turns: readonly string[];
  readonly questions: readonly string[];
}

/** CPU ms a search, k = 10 as the load bench asks, without and with evidence. */
export interface StoreSplit {
  readonly searches: number;
  readonly plainMs: number;
  readonly explainMs: number;
}

/**
 * Fills a store (its resident banks' product `residentProduct`) in a temporary folder with every bank's turns (encoded by `embedder`), searches
 * every question once unmeasured (views and resident kernels built), then each question with
 * `explain: false` and `explain: true` in turn, measuring the process's CPU time of each search.
 * The folder is removed.
 */
export async function storeSplit(
  embedder: Embedder,
  banks: readonly FloorBank[],
  residentProduct: 'fp32' | 'int8' = 'fp32',
): Promise<StoreSplit> {
  const dir = await mkdtemp(join(tmpdir(), 'bfe-search-floor-'));
  const index = storeIndexFactory({ threads: 1, residentProduct });
  const store = await MemoryStore.open(dir, { embedder, threads: 1, index });
  try {
    for (const { bank, turns } of banks) {
      await store.add(turns.map((text, i) => ({ id: `t${i}`, bank, text })));
    }
    const asked = banks.flatMap(({ bank, questions }) =>
      questions.map((query) => ({ bank, query })),
    );
    for (const q of asked) await store.search({ ...q, k: 10 });
    let plain = 0;
    let explained = 0;
    for (const q of asked) {
      const c0 = process.cpuUsage();
      await store.search({ ...q, k: 10, explain: false });
      plain += cpuMsSince(c0);
      const c1 = process.cpuUsage();
      await store.search({ ...q, k: 10, explain: true });
      explained += cpuMsSince(c1);
    }
    return {
      searches: asked.length,
      plainMs: plain / asked.length,
      explainMs: explained / asked.length,
    };
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}
