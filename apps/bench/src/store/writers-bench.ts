/**
 * The `writers` part of `pnpm bench:store`: adds with fsync on from `--writers` concurrent
 * writers (default 1, 8 and 32), each adding one memory per call, with group commit and
 * without (`groupCommit: false`: one fsync per call), into a bank above the HNSW threshold
 * (`--graph-base` LoCoMo memories, ≈ 100k tokens) with its graph maintained and into the same
 * bank under the `exact` policy (no graph) — the peers, in the same run — and the bare peer of
 * one fsync per call: appends of one memory's WAL record size, each fdatasynced, in the same
 * folder. `--rounds` interleaved rounds (group commit on and off take turns first, and within
 * each the graphed and ungraphed banks, the first alternating); the best rate of each is kept.
 * The encodings are replayed (the store's own work is measured, not the encoder's); each
 * measurement adds
 * `--writer-memories` memories under new ids (texts cycled through the memories after the
 * base), after 8 untimed adds per opened store. Per row: memories/s of both
 * banks, their ratio, WAL records per fsync, and how long after the last add was acknowledged
 * the graph had applied every add (`graphsSettled`).
 */
import { mkdir, open, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, storeIndexFactory, type Embedder, type EncodedTexts } from '@bfe/store';
import { replayEmbedder } from '../shared/banks.js';
import { note } from '../shared/table.js';

export interface WritersBenchOptions {
  readonly writers: readonly number[];
  /** Memories added per measurement. */
  readonly memories: number;
  /** Memories in the bank before the measurements. */
  readonly base: number;
  /** Interleaved rounds (group commit on and off alternate first); the best rate is kept. */
  readonly rounds: number;
  readonly work: string;
}

/** Table head of {@link writerRows}. */
export const WRITERS_HEAD = [
  'writers',
  'group commit',
  'memories',
  'ungraphed memories/s',
  'graphed memories/s',
  'graphed/ungraphed',
  'records per fsync (ungraphed / graphed)',
  'graph caught up after',
  'bare write + fdatasync/s',
  'load',
];

const load = (): string => loadavg()[0]!.toFixed(2);
const BANK = 'big';
const WARM_UP = 8;

/**
 * The peer of one fsync per call: appends of `bytes` (one memory's WAL record) each followed by
 * fdatasync, per second, in `dir`.
 */
async function bareSyncs(dir: string, bytes: number, count = 200): Promise<number> {
  const path = join(dir, 'bare-sync.log');
  const file = await open(path, 'a');
  const frame = Buffer.alloc(bytes, 7);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    await file.write(frame);
    await file.datasync();
  }
  const s = (performance.now() - t0) / 1000;
  await file.close();
  await rm(path, { force: true });
  return count / s;
}

interface Measured {
  readonly rate: number;
  readonly perSync: number;
  readonly settleS: number;
}

/** `count` adds of one memory each from `writers` loops; returns seconds until all resolved. */
async function concurrentAdds(
  store: MemoryStore,
  writers: number,
  items: readonly { id: string; text: string }[],
): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < items.length) {
        const { id, text } = items[next++]!;
        await store.add([{ id, bank: BANK, text }]);
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

/**
 * Rows of adds from concurrent writers (see the file comment). `all` encodes `texts`; the first
 * `base` fill the bank, the rest are cycled through by the measurements.
 */
export async function writerRows(
  all: EncodedTexts,
  texts: readonly string[],
  embedder: Embedder,
  options: WritersBenchOptions,
): Promise<string[][]> {
  const replay = replayEmbedder(embedder, texts, all);
  const { base, memories } = options;
  const results = new Map<string, Measured>();
  const policies = ['ungraphed', 'graphed'] as const;
  const dirs = { ungraphed: '', graphed: '' };
  for (const policy of policies) {
    const dir = (dirs[policy] = join(options.work, `writers-${policy}`));
    await mkdir(dir, { recursive: true });
    const fill = await MemoryStore.open(dir, {
      embedder: replay,
      index: storeIndexFactory({ exact: policy === 'ungraphed' }),
      compactSegments: 0,
    });
    for (let i = 0; i < base; i += 256)
      await fill.add(
        Array.from({ length: Math.min(256, base - i) }, (_, j) => ({
          id: `b${i + j}`,
          bank: BANK,
          text: texts[i + j]!,
        })),
      );
    await fill.close(); // flushes; the graphed store saves its graph at its first search below
  }
  const pool = texts.length - base;
  /** One store opened on `policy`'s bank: the warm-up, then each writer count's adds. */
  const measure = async (
    policy: (typeof policies)[number],
    round: number,
    group: boolean,
    offset: number,
  ): Promise<void> => {
    const exact = policy === 'ungraphed';
    const dir = dirs[policy];
    const index = storeIndexFactory({ exact });
    const store = await MemoryStore.open(dir, {
      embedder: replay,
      index,
      compactSegments: 0,
      groupCommit: group,
    });
    await store.search({ bank: BANK, query: texts[0]!, k: 1 }); // loads or builds the graph
    const t0 = performance.now();
    await index.graphsSettled();
    if (!exact)
      note(
        `writers: graph ${index.graphStats().opened[BANK]} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    // Untimed: a few adds first, so no measurement pays for the store's first writes.
    const warm = Array.from({ length: WARM_UP }, (_, i) => ({
      id: `${policy}-r${round}${group ? 'g' : 's'}-warm-${i}`,
      text: texts[base + ((offset + i) % pool)]!,
    }));
    await concurrentAdds(store, 1, warm);
    await index.graphsSettled();
    let at = offset + WARM_UP;
    for (const writers of options.writers) {
      const items = Array.from({ length: memories }, (_, i) => ({
        id: `${policy}-r${round}${group ? 'g' : 's'}${writers}-${i}`,
        text: texts[base + ((at + i) % pool)]!,
      }));
      at += memories;
      const before = (await store.stats()).commits;
      const seconds = await concurrentAdds(store, writers, items);
      const t1 = performance.now();
      await index.graphsSettled();
      const settleS = (performance.now() - t1) / 1000;
      const after = (await store.stats()).commits;
      const perSync = (after.records - before.records) / (after.syncs - before.syncs);
      const m = { rate: memories / seconds, perSync, settleS };
      const key = `${policy} ${group} ${writers}`;
      if (m.rate > (results.get(key)?.rate ?? 0)) results.set(key, m);
      note(
        `writers: round ${round}, ${policy}, group commit ${group ? 'on' : 'off'}, ${writers} writers: ${m.rate.toFixed(1)} memories/s, ${perSync.toFixed(1)} records/fsync, graph settled +${settleS.toFixed(2)} s (load ${load()})`,
      );
    }
    await store.close();
    const tokens = all.tokenOffsets[all.count]! / all.count;
    const bare = await bareSyncs(dir, Math.round(tokens * (all.dim * 4 + 8) + all.dim * 4));
    if (bare > (results.get('bare')?.rate ?? 0))
      results.set('bare', { rate: bare, perSync: 1, settleS: 0 });
  };
  // The two banks take turns (the first alternates), so each pair of measurements sees the
  // same moment of the machine and the same texts.
  let offset = 0;
  for (let round = 0; round < options.rounds; round++)
    for (const group of round % 2 === 0 ? [true, false] : [false, true]) {
      for (const policy of round % 2 === 0 ? policies : [...policies].reverse())
        await measure(policy, round, group, offset);
      offset += WARM_UP + options.writers.length * memories;
    }
  for (const dir of Object.values(dirs)) await rm(dir, { recursive: true, force: true });
  const rows: string[][] = [];
  for (const group of [true, false])
    for (const writers of options.writers) {
      const u = results.get(`ungraphed ${group} ${writers}`)!;
      const g = results.get(`graphed ${group} ${writers}`)!;
      rows.push([
        String(writers),
        group ? 'on' : 'off',
        String(memories),
        u.rate.toFixed(1),
        g.rate.toFixed(1),
        `${(g.rate / u.rate).toFixed(2)}×`,
        `${u.perSync.toFixed(1)} / ${g.perSync.toFixed(1)}`,
        `${g.settleS.toFixed(2)} s`,
        results.get('bare')!.rate.toFixed(0),
        load(),
      ]);
    }
  return rows;
}
