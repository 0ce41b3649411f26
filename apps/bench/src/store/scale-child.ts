/**
 * The child processes of the `scale` part of `pnpm bench:store` (scale-bench.ts), one JSON
 * argument each:
 * - `open`: opens the store (timed; RSS right after `open` resolves), counts its memories,
 *   checks that the memories a file lists are all present, runs the listed searches (RSS sampled
 *   after each) and prints one JSON line; it does not wait for background graph builds.
 * - `add`: opens the store and adds LoCoMo memories in batches into the named banks until it
 *   is killed, printing `acked <bank> <from> <to>` once each add has resolved (durable).
 */
import { readFile } from 'node:fs/promises';
import { MemoryStore, storeIndexFactory } from '@bfe/store';
import { rng } from '@bfe/index/testing';
import { loadPools, poolEmbedder, readQueries } from './scale-pool.js';

/** What the `open` child is asked. */
export interface OpenTask {
  readonly mode: 'open';
  readonly dir: string;
  readonly cacheBytes: number;
  /** The index's `maxGraphBytes` (default: the store's). */
  readonly graphBytes?: number;
  /** {@link writeQueries}' file of the searches' queries (row i is search i's query). */
  readonly queries?: string;
  readonly banks?: readonly string[];
  /** A JSON file of `[bank, id]` pairs that must be present. */
  readonly check?: string;
}

/** What the `add` child is asked. */
export interface AddTask {
  readonly mode: 'add';
  readonly dir: string;
  readonly cacheBytes: number;
  readonly banks: readonly string[];
  readonly batch: number;
  readonly seed: number;
}

/** The `open` child's answer. */
export interface OpenReport {
  readonly openSeconds: number;
  readonly rssAfterOpenMb: number;
  readonly memories: number;
  readonly tokens: number;
  readonly walRecordsReplayed: number;
  readonly tornBytes: number;
  readonly missing: number;
  readonly checked: number;
  readonly searches: number;
  readonly searchP50Ms: number;
  readonly rssServingMaxMb: number;
  readonly peakRssMb: number;
  /** At the largest RSS while serving: where the memory was (MiB). */
  readonly atMax: MemoryParts;
  readonly graphBanks: number;
}

const rss = (): number => process.memoryUsage.rss() / 2 ** 20;

/** A process's memory by part (MiB): V8's heap, ArrayBuffers, the store's cache and graphs. */
export interface MemoryParts {
  readonly rss: number;
  readonly heapUsed: number;
  readonly arrayBuffers: number;
  readonly cache: number;
  readonly graphs: number;
  readonly graphEvictions: number;
}

async function openChild(task: OpenTask): Promise<OpenReport> {
  const queries = task.queries === undefined ? undefined : await readQueries(task.queries);
  // The embedder is a small replay of the queries (model hash and dimension of the store).
  const model = queries ?? (await loadPools(0)).queries;
  const embedder = poolEmbedder(undefined, model);
  const t0 = performance.now();
  // The store's default, kept to read its graph counters.
  const index = storeIndexFactory(
    task.graphBytes === undefined ? {} : { maxGraphBytes: task.graphBytes },
  );
  const store = await MemoryStore.open(task.dir, { embedder, index, cacheBytes: task.cacheBytes });
  const openSeconds = (performance.now() - t0) / 1000;
  const rssAfterOpenMb = rss();
  const stats = await store.stats();
  let missing = 0;
  let checked = 0;
  if (task.check !== undefined) {
    const pairs = JSON.parse(await readFile(task.check, 'utf8')) as [string, string][];
    for (const [bank, id] of pairs) {
      checked++;
      if (store.get(bank, id) === undefined) missing++;
    }
  }
  const times: number[] = [];
  let servingMax = rssAfterOpenMb;
  const parts = async (): Promise<MemoryParts> => {
    const m = process.memoryUsage();
    const g = index.graphStats();
    return {
      rss: m.rss / 2 ** 20,
      heapUsed: m.heapUsed / 2 ** 20,
      arrayBuffers: m.arrayBuffers / 2 ** 20,
      cache: (await store.stats()).cache.bytes / 2 ** 20,
      graphs: g.heldBytes / 2 ** 20,
      graphEvictions: g.evictions,
    };
  };
  let atMax = await parts();
  const banks = task.banks ?? [];
  for (let i = 0; i < banks.length && queries !== undefined; i++) {
    const t = performance.now();
    await store.search({
      bank: banks[i]!,
      query: queries.texts[i % queries.texts.length]!,
      k: 10,
      system: 'sparse-fusion',
    });
    times.push(performance.now() - t);
    if (rss() > servingMax) {
      servingMax = rss();
      atMax = await parts();
    }
  }
  times.sort((a, b) => a - b);
  const graphBanks = Object.keys(index.graphStats().opened).length;
  const report: OpenReport = {
    openSeconds,
    rssAfterOpenMb,
    memories: stats.memories,
    tokens: stats.tokens,
    walRecordsReplayed: store.recovery.records,
    tornBytes: store.recovery.tornBytes,
    missing,
    checked,
    searches: times.length,
    searchP50Ms: times[times.length >> 1] ?? 0,
    rssServingMaxMb: servingMax,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    graphBanks,
    atMax,
  };
  // Closing would wait for the graphs the searches started building (derived data): not here.
  if (times.length === 0) await store.close({ flush: false });
  return report;
}

async function addChild(task: AddTask): Promise<void> {
  const { memories, queries } = await loadPools(0);
  const store = await MemoryStore.open(task.dir, {
    embedder: poolEmbedder(memories, queries),
    cacheBytes: task.cacheBytes,
  });
  const rand = rng(task.seed);
  const n = memories.texts.length;
  for (let from = 0; from < 10_000_000; from += task.batch) {
    const bank = task.banks[Math.floor(rand() * task.banks.length)]!;
    const items = [];
    for (let j = 0; j < task.batch; j++)
      items.push({ id: `crash-${from + j}`, bank, text: memories.texts[Math.floor(rand() * n)]! });
    await store.add(items);
    process.stdout.write(`acked ${bank} ${from} ${from + task.batch}\n`);
  }
}

const task = JSON.parse(process.argv[2]!) as OpenTask | AddTask;
if (task.mode === 'open') {
  process.stdout.write(`${JSON.stringify(await openChild(task))}\n`);
  process.exit(0);
} else await addChild(task);
