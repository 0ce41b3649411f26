/**
 * `pnpm bench:store`: a benchmark, not a test. Measures, in one run on LoCoMo's turns (as bfe's
 * loader builds them) and the same MiniLM embedder, each part beside a peer from the same run:
 * - `add`: `MemoryStore.add` (encode + WAL append + fdatasync + memtable) in batches of 32 and
 *   of 1, against the bare embedder encoding the same batches (the peer), in memories/s and
 *   content tokens/s, best of `--rounds` interleaved rounds;
 * - `reopen`: reopening a store of `--recovery-memories` memories (the measured memories
 *   repeated under new ids across banks, so no further encoding is needed) from its WAL alone
 *   and from flushed segments, against reading the same bytes from disk (the peer);
 * - `search`: one query at a time (`searchView`, as `MemoryStore.search` runs it: sparse
 *   fusion, token k 64, α 0.5, top 10, evidence, the store's default `residentIndexFactory`)
 *   on a LoCoMo-size bank (the largest conversation, its own queries) and on banks of
 *   `--sizes` memories (LoCoMo's 5,882 encoded memories; larger banks repeat their real
 *   vectors under new ids; `--queries` queries spread over LoCoMo's), p50/p90 of: the query's
 *   encoding, the search, both (the target: p50 ≤ 20 ms on a LoCoMo-size bank), the
 *   search without evidence, the search without the resident index (the scorer's per-call
 *   exact index), and the peer: the bare `SparseScorer.score` call for the same query and
 *   candidates. The calls rotate their order per query; the first query is an untimed warm-up
 *   (after which the resident bank is ready).
 *
 * - `graph`, `graph-add`: the HNSW graphs of large banks, HNSW vs exact in the same run (see
 *   graph-bench.ts; `--graph-sizes`, `--jitter`, `--graph-base`, `--graph-added`).
 * - `writers`: adds with fsync on from `--writers` concurrent writers (one memory per call), with
 *   and without group commit, into a bank above the HNSW threshold with its graph and into the
 *   same bank without one (see writers-bench.ts; `--writer-memories`, `--graph-base`).
 * - `hybrid`: on the same banks as `search` (`--sizes`, `--queries`), the `hybrid` search
 *   (pooled + sparse + BM25, English) beside `sparse-fusion` (the peer), with and without
 *   evidence, and the lexical index's costs: deriving a bank's BM25 postings from its texts and
 *   keeping them per added memory (see hybrid-bench.ts).
 * - `codecs`: retrieval quality per store codec (fp32, fp16, sq8, sq4) on LoCoMo and
 *   LongMemEval-S from the experiment's encoded vectors, sparse-fusion and no-fusion, Δ vs fp32
 *   with paired bootstrap CIs, and the fp32 store beside the experiment's scored run (see
 *   codec-quality.ts; `--codecs`, `--codec-datasets`, `--lme-every`).
 *
 * - `pieces`: a bank over several segments viewed as pieces against one contiguous copy (see
 *   pieces-bench.ts; `--piece-memories`, `--piece-segments`).
 * - `scale`: one store of `--memories` memories in `--banks` banks from real token states: build,
 *   bytes on disk, RSS, reopen (clean and after kill -9), search p50/p90 in a 10,000-memory bank
 *   with and without its graph (see scale-bench.ts; not in the default parts).
 *
 * `--parts add,reopen,search,graph,graph-add,hybrid,writers,codecs,pieces,scale` selects parts (default all but scale); `--sizes ''` measures the conversation
 * bank alone; `--threads` sets onnxruntime's intra-op threads of the embedder, the scorer and the
 * resident kernels. Timings on a shared machine are
 * noisy: the load average is printed beside them.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:store --work /work/scratch/x
 * pnpm bench:store --parts search --sizes 1000,10000 --queries 20 --markdown
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { MemoryStore, openEmbedder, type Embedder } from '@bfe/store';
import { GRAPH_ADD_HEAD, GRAPH_HEAD, graphAddRows, graphSearchRows } from './graph-bench.js';
import { HYBRID_HEAD, hybridLatency } from './hybrid-bench.js';
import {
  CODEC_HEAD,
  EXPERIMENT_HEAD,
  codecFlags,
  codecQuality,
  type CodecOptions,
} from './codec-quality.js';
import { PIECES_HEAD, piecesPart } from './pieces-bench.js';
import { scaleFlags, scalePart, type ScaleCliOptions } from './scale-cli.js';
import { WRITERS_HEAD, writerRows } from './writers-bench.js';
import { SEARCH_HEAD, searchLatency } from './search-latency.js';
import { replayEmbedder } from '../shared/banks.js';
import {
  benchCommand,
  flag,
  intList,
  nonNegativeNumber,
  parseCommand,
  positive,
  runScript,
  someOf,
} from '../shared/cli.js';
import { note, out, printTable } from '../shared/table.js';

const PARTS = [
  'add',
  'reopen',
  'search',
  'graph',
  'graph-add',
  'hybrid',
  'writers',
  'codecs',
  'pieces',
  'scale',
] as const;

interface Options extends CodecOptions, ScaleCliOptions {
  memories: number;
  singleMemories: number;
  recoveryMemories: number;
  rounds: number;
  threads?: number;
  work?: string;
  model: string;
  markdown?: boolean;
  parts: (typeof PARTS)[number][];
  sizes: number[];
  queries: number;
  graphSizes: number[];
  jitter: number;
  graphBase: number;
  graphAdded: number;
  writers: number[];
  writerMemories: number;
  pieceMemories: number;
  pieceSegments: number;
}

const command = benchCommand(
  'bench:store',
  "the memory store's adds, reopen, search and graphs on LoCoMo, each beside a peer from the same run",
)
  .addOption(flag('--memories <n>', 'add: batched memories; scale: all', positive, '1024'))
  .addOption(flag('--single-memories <n>', 'memories added one at a time', positive, '128'))
  .addOption(flag('--recovery-memories <n>', 'memories of the reopened store', positive, '10240'))
  .addOption(flag('--rounds <n>', 'interleaved add and writers rounds (best kept)', positive, '2'))
  .addOption(flag('--threads <n>', "onnxruntime intra-op threads (default: the store's)", positive))
  .option('--work <dir>', 'scratch folder (default: the system temp folder)')
  .option('--model <name>', 'the embedder', 'all-minilm-l6-v2')
  .option('--markdown', 'print the tables as Markdown')
  .addOption(
    flag('--parts <list>', 'parts to measure', someOf(PARTS), PARTS.slice(0, -1).join(',')),
  )
  .addOption(
    flag(
      '--sizes <list>',
      "search: bank sizes in memories ('' for the conversation bank alone)",
      intList,
      '1000,10000,100000',
    ),
  )
  .addOption(flag('--queries <n>', 'search and graph: queries per bank', positive, '30'))
  .addOption(flag('--graph-sizes <list>', 'graph: bank sizes in memories', intList, '10000,100000'))
  .addOption(flag('--jitter <x>', 'graph: noise on repeated vectors', nonNegativeNumber, '0.35'))
  .addOption(flag('--graph-base <n>', 'graph-add: memories before the adds', positive, '3000'))
  .addOption(flag('--graph-added <n>', 'graph-add: memories added', positive, '512'))
  .addOption(flag('--writers <list>', 'writers: concurrent writers', intList, '1,8,32'))
  .addOption(
    flag('--writer-memories <n>', 'writers: memories added per measurement', positive, '128'),
  )
  .addOption(flag('--piece-memories <n>', 'pieces: memories of the bank', positive, '10000'))
  .addOption(flag('--piece-segments <n>', 'pieces: segments it is flushed in', positive, '4'));
codecFlags(command);
scaleFlags(command);
const { options } = parseCommand<Options>(command);
const parts = new Set(options.parts);
const { sizes, queries, memories, rounds, threads, graphSizes, jitter } = options;
const singles = options.singleMemories;
const recoveryMemories = options.recoveryMemories;

const seconds = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e9;
const load = (): string => loadavg()[0]!.toFixed(2);

async function bareEncode(embedder: Embedder, texts: readonly string[], batch: number) {
  const t0 = process.hrtime.bigint();
  let tokens = 0;
  for (let i = 0; i < texts.length; i += batch) {
    const e = await embedder.encode(texts.slice(i, i + batch), 'passage');
    tokens += e.tokenOffsets[e.count]!;
  }
  return { seconds: seconds(t0), tokens };
}

async function storeAdd(embedder: Embedder, dir: string, texts: readonly string[], batch: number) {
  const store = await MemoryStore.open(dir, { embedder, compactSegments: 0 });
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < texts.length; i += batch)
    await store.add(
      texts.slice(i, i + batch).map((text, j) => ({ id: `m${i + j}`, bank: 'bench', text })),
    );
  const s = seconds(t0);
  const { tokens } = await store.stats();
  await store.close({ flush: false });
  await rm(dir, { recursive: true, force: true });
  return { seconds: s, tokens };
}

async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) total += (await readFile(join(e.parentPath, e.name))).byteLength;
  return total;
}

/** Reopen times (from the WAL, from segments) of a store built from `texts`' encodings. */
async function reopenRows(
  embedder: Embedder,
  texts: readonly string[],
  work: string,
): Promise<string[][]> {
  const rows: string[][] = [];
  // Recovery: a store of `recoveryMemories` memories built from the measured encodings.
  const all = await embedder.encode(texts, 'passage');
  const replay = replayEmbedder(embedder, texts, all);
  const dir = join(work, 'recovery');
  const store = await MemoryStore.open(dir, {
    embedder: replay,
    compactSegments: 0,
    flushBytes: 2 ** 40,
  });
  for (let i = 0; i < recoveryMemories; i += 256) {
    const items = [];
    for (let j = i; j < Math.min(recoveryMemories, i + 256); j++)
      items.push({ id: `m${j}`, bank: `conv-${j % 10}`, text: texts[j % texts.length]! });
    await store.add(items);
  }
  const stats = await store.stats();
  await store.close({ flush: false });
  for (const from of ['WAL', 'segments'] as const) {
    if (from === 'segments') await (await MemoryStore.open(dir, { embedder: replay })).close();
    const bytes = await dirBytes(dir); // the peer: reading the same bytes
    const t1 = process.hrtime.bigint();
    for (const name of await readdir(dir, { recursive: true }))
      if (name.endsWith('.log') || name.endsWith('.arrow')) readFileSync(join(dir, name));
    const raw = seconds(t1);
    const t0 = process.hrtime.bigint();
    const reopened = await MemoryStore.open(dir, { embedder: replay, compactSegments: 0 });
    const s = seconds(t0);
    const check = await reopened.stats();
    await reopened.close({ flush: false });
    if (check.memories !== stats.memories) throw new Error('recovery lost memories');
    rows.push([
      `reopen from ${from}`,
      String(stats.memories),
      `${s.toFixed(2)} s`,
      `${(bytes / 2 ** 20).toFixed(0)} MiB`,
      `${raw.toFixed(2)} s read`,
      (raw / s).toFixed(2),
      load(),
    ]);
  }
  return rows;
}

async function main(): Promise<void> {
  if (parts.has('scale')) await scalePart(options);
  if (parts.has('scale') && parts.size === 1) return;
  const work = await mkdtemp(join(options.work ?? tmpdir(), 'bfe-bench-store-'));
  const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
  const texts = [...new Set(loaded.benchmark.memories.map((m) => m.text))].slice(0, memories);
  const embedder = await openEmbedder({
    model: options.model,
    ...(threads === undefined ? {} : { threads }),
  });
  note(`${texts.length} LoCoMo memories, model ${options.model}, work ${work}`);
  const rows: string[][] = [];
  let searchRows: string[][] = [];
  let hybridRows: string[][] = [];
  const graphRows: string[][] = [];
  const graphAdd: string[][] = [];
  let writersRows: string[][] = [];
  let piecesTable: string[][] = [];
  let codecTables = { codecs: [] as string[][], experiment: [] as string[][] };
  try {
    await embedder.encode(texts.slice(0, 32), 'passage'); // warm-up
    for (const batch of parts.has('add') ? [32, 1] : []) {
      const subset = batch === 1 ? texts.slice(0, singles) : texts;
      let bare = { seconds: Infinity, tokens: 0 };
      let store = { seconds: Infinity, tokens: 0 };
      for (let r = 0; r < rounds; r++) {
        const b = await bareEncode(embedder, subset, batch);
        if (b.seconds < bare.seconds) bare = b;
        const s = await storeAdd(embedder, join(work, `add-${batch}-${r}`), subset, batch);
        if (s.seconds < store.seconds) store = s;
        note(
          `batch ${batch} round ${r}: bare ${b.seconds.toFixed(2)} s, store ${s.seconds.toFixed(2)} s`,
        );
      }
      const n = subset.length;
      rows.push([
        `add, batch ${batch}`,
        String(n),
        (n / store.seconds).toFixed(1),
        (store.tokens / store.seconds).toFixed(0),
        (n / bare.seconds).toFixed(1),
        (bare.seconds / store.seconds).toFixed(2),
        load(),
      ]);
    }
    if (parts.has('reopen')) rows.push(...(await reopenRows(embedder, texts, work)));
    if (parts.has('search'))
      searchRows = await searchLatency(loaded.benchmark, embedder, {
        sizes,
        queries,
        ...(threads === undefined ? {} : { threads }),
      });
    if (parts.has('hybrid'))
      hybridRows = await hybridLatency(loaded.benchmark, embedder, {
        sizes,
        queries,
        ...(threads === undefined ? {} : { threads }),
      });
    if (parts.has('graph') || parts.has('graph-add')) {
      const base = options.graphBase;
      const added = options.graphAdded;
      // The graph-add part alone needs only its memories encoded (the adds run twice: timed,
      // then under searches while the graph applies them).
      const unique = [...new Set(loaded.benchmark.memories.map((m) => m.text))].slice(
        0,
        parts.has('graph') ? undefined : base + 2 * added,
      );
      note(`graph: encoding ${unique.length} LoCoMo memories …`);
      const all = await embedder.encode(unique, 'passage');
      const graphOptions = {
        sizes: graphSizes,
        queries,
        jitter,
        work,
        ...(threads === undefined ? {} : { threads }),
      };
      if (parts.has('graph-add'))
        graphAdd.push(
          ...(await graphAddRows(all, unique, embedder, {
            ...graphOptions,
            base,
            added,
          })),
        );
      if (parts.has('graph'))
        graphRows.push(
          ...(await graphSearchRows(
            all,
            unique,
            loaded.benchmark.queries.map((q) => q.text),
            embedder,
            graphOptions,
          )),
        );
    }
    if (parts.has('writers')) {
      const base = options.graphBase;
      const needed = base + (options.writerMemories * options.writers.length + 8) * 2 * rounds;
      const unique = [...new Set(loaded.benchmark.memories.map((m) => m.text))].slice(0, needed);
      note(`writers: encoding ${unique.length} LoCoMo memories …`);
      const all = await embedder.encode(unique, 'passage');
      writersRows = await writerRows(all, unique, embedder, {
        writers: options.writers,
        memories: options.writerMemories,
        base,
        rounds,
        work,
      });
    }
    if (parts.has('codecs')) codecTables = await codecQuality(options, { work, threads });
    if (parts.has('pieces'))
      piecesTable = await piecesPart(loaded.benchmark, embedder, {
        memories: options.pieceMemories,
        segments: options.pieceSegments,
        rounds: Math.max(5, rounds),
        queries,
        work,
      });
  } finally {
    await embedder.dispose();
    await rm(work, { recursive: true, force: true });
  }
  const style = { markdown: options.markdown };
  if (rows.length > 0)
    printTable(
      {
        head: [
          'measure',
          'memories',
          'store',
          'store tokens/s or bytes',
          'peer',
          'peer/store time',
          'load',
        ],
        rows,
      },
      style,
    );
  for (const [head, body] of [
    [GRAPH_ADD_HEAD, graphAdd],
    [GRAPH_HEAD, graphRows],
    [HYBRID_HEAD, hybridRows],
    [WRITERS_HEAD, writersRows],
    [CODEC_HEAD, codecTables.codecs],
    [EXPERIMENT_HEAD, codecTables.experiment],
    [PIECES_HEAD, piecesTable],
  ] as const) {
    if (body.length === 0) continue;
    out('');
    printTable({ head, rows: body }, style);
  }
  if (searchRows.length === 0) return;
  out('');
  printTable({ head: SEARCH_HEAD, rows: searchRows }, style);
}

await runScript('bench:store', main);
