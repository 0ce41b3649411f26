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
 *
 * `--parts add,reopen,search,graph,graph-add` selects parts (default all); `--sizes ''` measures the conversation
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
import { parseArgs } from 'node:util';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { MemoryStore, openEmbedder, type Embedder } from '@bfe/store';
import { GRAPH_ADD_HEAD, GRAPH_HEAD, graphAddRows, graphSearchRows } from './graph-bench.js';
import { SEARCH_HEAD, searchLatency } from './search-latency.js';
import { intList, positive } from '../shared/args.js';
import { replayEmbedder } from '../shared/banks.js';
import { note, out } from '../shared/output.js';
import { terminalTableLines } from '@bfe/core';

const { values } = parseArgs({
  options: {
    memories: { type: 'string', default: '1024' },
    'single-memories': { type: 'string', default: '128' },
    'recovery-memories': { type: 'string', default: '10240' },
    rounds: { type: 'string', default: '2' },
    threads: { type: 'string' },
    work: { type: 'string' },
    model: { type: 'string', default: 'all-minilm-l6-v2' },
    markdown: { type: 'boolean', default: false },
    parts: { type: 'string', default: 'add,reopen,search,graph,graph-add' },
    sizes: { type: 'string', default: '1000,10000,100000' },
    queries: { type: 'string', default: '30' },
    'graph-sizes': { type: 'string', default: '10000,100000' },
    jitter: { type: 'string', default: '0.35' },
    'graph-base': { type: 'string', default: '3000' },
    'graph-added': { type: 'string', default: '512' },
  },
});
const PARTS = ['add', 'reopen', 'search', 'graph', 'graph-add'] as const;
const parts = new Set(values.parts.split(',').map((x) => x.trim()));
for (const part of parts)
  if (!(PARTS as readonly string[]).includes(part))
    throw new Error(`--parts: unknown part '${part}' (${PARTS.join(', ')})`);
const sizes = values.sizes === '' ? [] : intList('--sizes', values.sizes);
const queries = positive('--queries', values.queries);
const memories = positive('--memories', values.memories);
const singles = positive('--single-memories', values['single-memories']);
const recoveryMemories = positive('--recovery-memories', values['recovery-memories']);
const rounds = positive('--rounds', values.rounds);
const threads = values.threads === undefined ? undefined : positive('--threads', values.threads);
const graphSizes =
  values['graph-sizes'] === '' ? [] : intList('--graph-sizes', values['graph-sizes']);
const jitter = Number(values.jitter);
if (!(jitter >= 0)) throw new Error('--jitter: a non-negative number');

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
  const work = await mkdtemp(join(values.work ?? tmpdir(), 'bfe-bench-store-'));
  const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
  const texts = [...new Set(loaded.benchmark.memories.map((m) => m.text))].slice(0, memories);
  const embedder = await openEmbedder({
    model: values.model,
    ...(threads === undefined ? {} : { threads }),
  });
  note(`${texts.length} LoCoMo memories, model ${values.model}, work ${work}`);
  const rows: string[][] = [];
  let searchRows: string[][] = [];
  const graphRows: string[][] = [];
  const graphAdd: string[][] = [];
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
    if (parts.has('graph') || parts.has('graph-add')) {
      const base = positive('--graph-base', values['graph-base']);
      const added = positive('--graph-added', values['graph-added']);
      // The graph-add part alone needs only its memories encoded.
      const unique = [...new Set(loaded.benchmark.memories.map((m) => m.text))].slice(
        0,
        parts.has('graph') ? undefined : base + added,
      );
      note(`graph: encoding ${unique.length} LoCoMo memories …`);
      const all = await embedder.encode(unique, 'passage');
      const options = {
        sizes: graphSizes,
        queries,
        jitter,
        work,
        ...(threads === undefined ? {} : { threads }),
      };
      if (parts.has('graph-add'))
        graphAdd.push(
          ...(await graphAddRows(all, unique, embedder, {
            ...options,
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
            options,
          )),
        );
    }
  } finally {
    await embedder.dispose();
    await rm(work, { recursive: true, force: true });
  }
  const table = terminalTableLines({
    head: [
      'measure',
      'memories',
      'store',
      'store tokens/s or bytes',
      'peer',
      'peer/store time',
      'load',
    ],
    align: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
    rows,
    style: values.markdown ? 'markdown' : 'plain',
  });
  if (rows.length > 0) for (const line of table) out(line);
  const style = values.markdown ? 'markdown' : 'plain';
  for (const [head, body] of [
    [GRAPH_ADD_HEAD, graphAdd],
    [GRAPH_HEAD, graphRows],
  ] as const) {
    if (body.length === 0) continue;
    out('');
    const align = head.map((_, c) => (c === 0 ? 'left' : 'right') as 'left' | 'right');
    for (const line of terminalTableLines({ head: [...head], align, rows: body, style })) out(line);
  }
  if (searchRows.length === 0) return;
  out('');
  const search = terminalTableLines({
    head: SEARCH_HEAD,
    align: SEARCH_HEAD.map((_, c) => (c === 0 ? 'left' : 'right')),
    rows: searchRows,
    style: values.markdown ? 'markdown' : 'plain',
  });
  for (const line of search) out(line);
}

try {
  await main();
} catch (error) {
  note(`bench:store: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
}
