/**
 * The `scale` part of `pnpm bench:store`: one `MemoryStore` of `--memories` memories across
 * `--banks` banks, built from real MiniLM token states (LoCoMo's memories and LongMemEval-S's,
 * read from the encode cache, reused under new ids: encoding skipped), with the store options
 * `codec` and `cacheBytes`. In one run:
 * - build: adds in batches of `--scale-batch`, bank by bank (fsync on, as every add), then a
 *   flush; wall time, memories/s, tokens/s;
 * - bytes on disk per content token after a clean close (segments + WAL + manifest);
 * - in a child process: the reopen after the clean close (time, RSS right after `open`
 *   resolves), then `--scale-searches` `sparse-fusion` searches (k 10) of banks drawn by a seeded
 *   RNG, RSS sampled after each (its largest);
 * - search p50/p90 in the bank of `--latency-bank` memories through its HNSW graph (the store's
 *   default above 65,536 tokens; built, then measured) and with the store opened on an exact
 *   index; the query encodings are replayed (real MiniLM query states), so encoding is excluded;
 * - kill -9 of a child adding memories (acknowledged adds since its last flush are in the WAL
 *   only), then the reopen in a child: time, WAL records replayed, every acknowledged memory
 *   present (by id, and the count). A run whose estimated size does not fit the free disk is
 *   refused before it writes; `--max-build-seconds` stops the adds and measures what was built.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { rng } from '@bfe/index/testing';
import { MemoryStore, type StoreOptions } from '@bfe/store';
import { note } from '../shared/table.js';
import { latency } from './scale-latency.js';
import type { OpenReport } from './scale-child.js';
import {
  bankSizes,
  loadPools,
  poolEmbedder,
  poolRows,
  writeQueries,
  type EncodedPool,
} from './scale-pool.js';
import {
  childReport,
  freeBytes,
  runScaleChild,
  storeBytes,
  type ScaleChildExit,
} from './scale-proc.js';

export const CODECS = ['fp32', 'fp16', 'sq8', 'sq4'] as const;
/** The part's steps, in the order they run. */
export const SCALE_STEPS = ['build', 'serve', 'latency', 'crash'] as const;
type Codec = NonNullable<StoreOptions['codec']>;

/** Bytes a codec keeps per token state (384-d), for the disk estimate. */
const CODEC_BYTES: Record<Codec, number> = { fp32: 1536, fp16: 768, sq8: 384, sq4: 192 };

export interface ScaleOptions {
  readonly memories: number;
  readonly banks: number;
  readonly codec: Codec;
  readonly cacheBytes: number;
  /** The serving child's `maxGraphBytes` (default: the store's). */
  readonly graphBytes?: number;
  readonly latencyBank: number;
  readonly searches: number;
  readonly queries: number;
  readonly lmeShare: number;
  readonly lmeMemories: number;
  readonly crashMemories: number;
  readonly batch: number;
  readonly seed: number;
  readonly rssLimitGb: number;
  /** Stop adding (at a bank's end) after this many seconds and measure what was built; 0: never. */
  readonly maxBuildSeconds: number;
  /** Steps run; without `build`, `store` names a store built by an earlier run. */
  readonly steps: readonly (typeof SCALE_STEPS)[number][];
  /** The store folder (kept); default a new folder under `work`. */
  readonly store?: string;
  readonly work?: string;
  readonly keep?: boolean;
}

/** Table head of {@link scaleRows}. */
export const SCALE_HEAD = ['measure', 'result', 'target', 'detail', 'load'];

const load = (): string => loadavg()[0]!.toFixed(2);
const gb = (bytes: number): string => `${(bytes / 1e9).toFixed(2)} GB`;
const mbGb = (mb: number): string => `${((mb * 2 ** 20) / 1e9).toFixed(2)} GB`;
const int = (n: number): string => Math.round(n).toLocaleString('en-US');

/** Runs the part; returns a caption and the table's rows. */
export async function scaleRows(o: ScaleOptions): Promise<{ caption: string[]; rows: string[][] }> {
  const rssLimitMb = (o.rssLimitGb * 1e9) / 2 ** 20;
  const sizes = bankSizes(o.memories, o.banks, o.latencyBank);
  const digits = String(sizes.length - 1).length;
  const names = sizes.map((_, b) => `b${String(b).padStart(digits, '0')}`);
  note(`scale: reading the encoded memories (LoCoMo, LongMemEval-S's first ${o.lmeMemories}) …`);
  const { memories: pool, queries: queryPool } = await loadPools(o.lmeMemories);
  const rows = poolRows(o.memories, pool, o.lmeShare, o.seed);
  const e = pool.encoded;
  const textBytes = pool.texts.map((t) => Buffer.byteLength(t));
  let tokens = 0;
  let texts = 0;
  let lmeCount = 0;
  for (const r of rows) {
    tokens += e.tokenOffsets[r + 1]! - e.tokenOffsets[r]!;
    texts += textBytes[r]!;
    if (r >= pool.split) lmeCount++;
  }
  // The estimate: the codec's bytes a token, ~8 B a token of ids and positions, the fp32
  // pooled vector (1536 B) and the text of each memory.
  const estimate = tokens * (CODEC_BYTES[o.codec] + 8) + o.memories * 1536 + texts;
  const parent = o.work ?? tmpdir();
  const building = o.steps.includes('build');
  const plan = `${int(o.memories)} memories (${int(tokens)} tokens) with codec ${o.codec}`;
  if (building) {
    const free = await freeBytes(o.store === undefined ? parent : join(o.store, '..'));
    const margin = 2 * 2 ** 30;
    if (estimate + margin > free)
      throw new Error(
        `refusing: ${plan} need about ${gb(estimate)} on disk (${CODEC_BYTES[o.codec]} B a token ` +
          `+ ~8 B a token of ids and positions + 1536 B a memory pooled + texts) plus a 2 GiB ` +
          `margin, and ${parent} has ${gb(free)} free. Use a smaller codec (--codec sq4), fewer ` +
          `--memories, or a --work folder on a larger disk.`,
      );
    note(`scale: ${plan}: estimated ${gb(estimate)}, ${gb(free)} free`);
  } else if (o.store === undefined || !existsSync(join(o.store, 'MANIFEST.json')))
    throw new Error(
      'scale: without the build step, --store must name a store an earlier run built',
    );
  const dir = o.store ?? (await mkdtemp(join(parent, 'bfe-bench-scale-')));
  const caption = [
    `${plan} in ${names.length} banks (sizes ${Math.min(...sizes.slice(1))}–${Math.max(...sizes.slice(1))}, ` +
      `bank ${names[0]}: ${int(sizes[0]!)}); rows drawn from ${pool.split} LoCoMo and ` +
      `${e.count - pool.split} LongMemEval-S memories (${int(lmeCount)} LongMemEval-S draws, ` +
      `share ${o.lmeShare}): their real MiniLM token states reused under new ids, encoding ` +
      `skipped; cacheBytes ${int(o.cacheBytes)}; seed ${o.seed}; store ${dir}`,
  ];
  note(caption[0]!);
  const out: string[][] = [];
  const push = out.push.bind(out); // each row noted as measured: a stopped run keeps them
  out.push = (...measured: string[][]): number => {
    for (const row of measured) note(`scale row: ${row.join(' | ')}`);
    return push(...measured);
  };
  try {
    const built = building
      ? await build(o, dir, names, sizes, rows, pool, queryPool, tokens, rssLimitMb)
      : await existing(dir, names, queryPool);
    out.push(built.row);
    if (built.memories < o.memories)
      caption.push(
        `The build stopped after --max-build-seconds ${o.maxBuildSeconds}: ${int(built.memories)} ` +
          `memories (${int(built.tokens)} tokens) in the first ${built.banks} banks are measured.`,
      );
    const bytes = await storeBytes(dir);
    const onDisk = bytes.segments + bytes.wal + bytes.manifest;
    out.push([
      'bytes on disk per content token (clean close)',
      `${(onDisk / built.tokens).toFixed(1)} B`,
      '',
      `segments ${gb(bytes.segments)} + WAL ${gb(bytes.wal)} + manifest ${int(bytes.manifest)} B ` +
        `= ${gb(onDisk)} over ${int(built.tokens)} tokens (est. for all ${gb(estimate)})`,
      load(),
    ]);
    const live = names.slice(0, built.banks);
    if (o.steps.includes('serve'))
      out.push(...(await serving(o, dir, live, built.memories, queryPool, rssLimitMb)));
    if (o.steps.includes('latency')) out.push(...(await latency(o, dir, names[0]!, queryPool)));
    if (o.steps.includes('crash'))
      out.push(...(await crash(o, dir, live, built.memories, rssLimitMb)));
  } finally {
    if (o.keep === true || o.store !== undefined) note(`scale: kept ${dir}`);
    else await rm(dir, { recursive: true, force: true });
  }
  return { caption, rows: out };
}

/** A store an earlier run built (the `build` step left out): its counts, as the build row. */
async function existing(
  dir: string,
  names: readonly string[],
  queries: EncodedPool,
): Promise<{ row: string[]; memories: number; tokens: number; banks: number }> {
  const store = await MemoryStore.open(dir, { embedder: poolEmbedder(undefined, queries) });
  const stats = await store.stats();
  await store.close();
  const banks = names.filter((b) => stats.banks[b] !== undefined).length;
  const row = [
    'build: skipped (a store built before)',
    '',
    '',
    `${int(stats.memories)} memories`,
    load(),
  ];
  return { row, memories: stats.memories, tokens: stats.tokens, banks };
}

async function build(
  o: ScaleOptions,
  dir: string,
  names: readonly string[],
  sizes: readonly number[],
  rows: Int32Array,
  pool: EncodedPool,
  queries: EncodedPool,
  tokens: number,
  rssLimitMb: number,
): Promise<{ row: string[]; memories: number; tokens: number; banks: number }> {
  const store = await MemoryStore.open(dir, {
    embedder: poolEmbedder(pool, queries),
    codec: o.codec,
    cacheBytes: o.cacheBytes,
  });
  const t0 = performance.now();
  let done = 0;
  let nextCheck = 0.01;
  let banks = 0;
  try {
    for (let b = 0; b < names.length; b++) {
      for (let from = 0; from < sizes[b]!; from += o.batch) {
        const items = [];
        for (let j = from; j < Math.min(sizes[b]!, from + o.batch); j++)
          items.push({ id: `m${done + j}`, bank: names[b]!, text: pool.texts[rows[done + j]!]! });
        await store.add(items);
      }
      done += sizes[b]!;
      if (done / o.memories >= nextCheck || b === names.length - 1) {
        nextCheck = done / o.memories + 0.01;
        await guard(store, dir, done, o.memories, tokens, t0, rssLimitMb);
      }
      banks = b + 1;
      if (o.maxBuildSeconds > 0 && performance.now() - t0 > o.maxBuildSeconds * 1000) break;
    }
    await store.flush();
  } catch (error) {
    await store.close({ flush: false });
    throw error;
  }
  const seconds = (performance.now() - t0) / 1000;
  const stats = await store.stats();
  await store.close();
  const row = [
    `build: adds in batches of ${o.batch}, bank by bank (fsync on), then flush`,
    `${seconds.toFixed(1)} s`,
    '',
    `${int(done / seconds)} memories/s, ${int(stats.tokens / seconds)} tokens/s ` +
      `(${int(stats.memories)} memories, ${banks} banks, ${stats.segments} segments)`,
    load(),
  ];
  return { row, memories: done, tokens: stats.tokens, banks };
}

/** Progress, and the build's stop conditions: resident memory, and the disk it will need. */
async function guard(
  store: MemoryStore,
  dir: string,
  done: number,
  n: number,
  tokens: number,
  t0: number,
  rssLimitMb: number,
): Promise<void> {
  const s = await store.stats();
  const free = await freeBytes(dir);
  const rss = process.memoryUsage.rss() / 2 ** 20;
  const elapsed = (performance.now() - t0) / 1000;
  // Segments a token (the WAL holds the memtable's fp32 rows until the next flush: counted once).
  const perToken = (s.bytesOnDisk - s.walBytes) / Math.max(1, s.tokens);
  const needed = (tokens - s.tokens) * perToken + s.walBytes;
  note(
    `  ${int(done)} / ${int(n)} memories, ${elapsed.toFixed(0)} s, ${int(done / elapsed)}/s, ` +
      `${perToken.toFixed(0)} B/token in segments, ${gb(free)} free, RSS ${mbGb(rss)}, load ${load()}`,
  );
  if (rss > rssLimitMb)
    throw new Error(`build stopped at ${done} memories: RSS ${mbGb(rss)} over --rss-limit-gb`);
  if (done / n >= 0.02 && needed > free - 2 ** 30)
    throw new Error(
      `build stopped at ${done} memories: the store's segments take ${perToken.toFixed(0)} B a ` +
        `token, so the rest needs about ${gb(needed)} and ${gb(free)} is free`,
    );
}

/** The clean reopen and the searches of random banks, in a child: time and RSS. */
async function serving(
  o: ScaleOptions,
  dir: string,
  names: readonly string[],
  memories: number,
  queryPool: EncodedPool,
  rssLimitMb: number,
): Promise<string[][]> {
  const rand = rng(o.seed + 1);
  const banks = Array.from({ length: o.searches }, () => names[Math.floor(rand() * names.length)]!);
  const qRows = banks.map(() => Math.floor(rand() * queryPool.encoded.count));
  const file = join(dir, '..', `${dir.split('/').pop()!}-queries.json`);
  await writeQueries(file, queryPool, qRows);
  note(`scale: reopen in a child, then ${o.searches} searches of random banks …`);
  let exit: ScaleChildExit;
  try {
    exit = await runScaleChild(
      {
        mode: 'open',
        dir,
        cacheBytes: o.cacheBytes,
        queries: file,
        banks,
        ...(o.graphBytes === undefined ? {} : { graphBytes: o.graphBytes }),
      },
      rssLimitMb,
    );
  } finally {
    await rm(file, { force: true });
  }
  const r = childReport(exit, 'reopen and searches', o.rssLimitGb);
  if (r.memories !== memories)
    throw new Error(`reopen counted ${r.memories} memories, ${memories} were added`);
  const cache =
    `cacheBytes ${int(o.cacheBytes)}, maxGraphBytes ` +
    (o.graphBytes === undefined ? 'default' : int(o.graphBytes));
  return [
    [
      'reopen after a clean close (child)',
      `${r.openSeconds.toFixed(2)} s`,
      '≤ 10 s',
      `${int(r.memories)} memories`,
      load(),
    ],
    ['RSS right after open (child)', mbGb(r.rssAfterOpenMb), '≤ 4 GB', cache, load()],
    [
      `RSS max serving ${r.searches} sparse-fusion searches, k 10, seeded random banks (child)`,
      mbGb(r.rssServingMaxMb),
      '≤ 4 GB',
      `${cache}; peak over the child's life ${mbGb(r.peakRssMb)}; search p50 ` +
        `${r.searchP50Ms.toFixed(1)} ms; graph builds started in ${r.graphBanks} banks; at the ` +
        `largest RSS: V8 heap ${mbGb(r.atMax.heapUsed)}, ArrayBuffers ${mbGb(r.atMax.arrayBuffers)}, ` +
        `cache ${mbGb(r.atMax.cache)}, graphs ${mbGb(r.atMax.graphs)} (${r.atMax.graphEvictions} dropped)`,
      load(),
    ],
  ];
}

/** kill -9 of a child adding memories, then the reopen in a child: every acknowledged add. */
async function crash(
  o: ScaleOptions,
  dir: string,
  names: readonly string[],
  memories: number,
  rssLimitMb: number,
): Promise<string[][]> {
  const acked: [string, string][] = [];
  note(`scale: a child adds memories, killed (SIGKILL) after ${o.crashMemories} acknowledged …`);
  const exit = await runScaleChild(
    { mode: 'add', dir, cacheBytes: o.cacheBytes, banks: names, batch: 32, seed: o.seed + 3 },
    rssLimitMb,
    (line) => {
      const m = /^acked (\S+) (\d+) (\d+)$/.exec(line);
      if (m === null) return undefined;
      for (let i = Number(m[2]); i < Number(m[3]); i++) acked.push([m[1]!, `crash-${i}`]);
      return acked.length >= o.crashMemories ? 'kill' : undefined;
    },
  );
  if (exit.signal !== 'SIGKILL' || exit.overLimit || acked.length < o.crashMemories)
    throw new Error(`the adding child ended otherwise (${exit.code ?? exit.signal}): ${exit.tail}`);
  const wal = (await storeBytes(dir)).wal;
  const file = join(dir, '..', `${dir.split('/').pop()!}-acked.json`);
  await writeFile(file, JSON.stringify(acked));
  let r: OpenReport;
  try {
    r = childReport(
      await runScaleChild({ mode: 'open', dir, cacheBytes: o.cacheBytes, check: file }, rssLimitMb),
      'reopen after kill -9',
      o.rssLimitGb,
    );
  } finally {
    await rm(file, { force: true });
  }
  const want = memories + acked.length;
  // An add in flight at the kill is whole or absent: at most one batch of 32 beyond the acked.
  const lost = r.missing > 0 || r.memories < want || r.memories > want + 32;
  return [
    [
      'reopen after kill -9 of a writer (WAL replayed, child)',
      `${r.openSeconds.toFixed(2)} s`,
      '≤ 10 s',
      `${acked.length} acknowledged adds (batches of 32, random banks); ${r.walRecordsReplayed} ` +
        `WAL records replayed (${gb(wal)} of WAL, ${r.tornBytes} torn bytes cut); ` +
        `${int(r.memories)} memories, ${want} acknowledged: ` +
        (lost ? `LOST ${r.missing} acknowledged` : `none lost (${r.checked} checked by id)`),
      load(),
    ],
  ];
}
