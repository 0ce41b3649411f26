/**
 * The HNSW parts of `pnpm bench:store` (issue 14's "the index for large banks"):
 * - `graph`: on banks of `--graph-sizes` memories (LoCoMo's real encoded memories, larger banks
 *   their copies, each copy's vectors moved by noise of norm `--jitter` and renormalised, so no
 *   two tokens tie), one query at a time, p50/p90 of the store's search (`searchView` with
 *   evidence, sparse fusion, top 10) through the bank's HNSW graph (`GraphTokenIndex`, the
 *   store's default for banks over 65,536 tokens) and through the exact index (today's path for
 *   large banks) in the same run, rotating their order; memory-level R@10 agreement with the
 *   exact search and token recall@64 of the graph's proposals; the graph's build time
 *   (tokens/s), file bytes, save and load times.
 * - `graph-add`: add throughput (batches of 32, the encodings replayed, so the store's own work
 *   is measured) into a bank above the threshold with its graph maintained vs the `exact`
 *   policy; how long after the last acknowledgement the graph had applied every add; search
 *   p50 (`store.search`, top 10, encodings replayed) while the graph applies as many adds again,
 *   and once it has caught up; then reopen: with the saved graph (load, no top-up), with the
 *   graph files removed (a rebuild), and exact (no graph).
 */
import { mkdir, rm, stat } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { ExactTokenIndex, flatTokenStore, loadIncrementalHnsw } from '@bfe/index';
import { rng } from '@bfe/index/testing';
import { SparseScorer } from '@bfe/scorer';
import {
  BankGraph,
  GRAPHS_DIR,
  GraphTokenIndex,
  MemoryStore,
  residentIndexFactory,
  searchView,
  storeIndexFactory,
  type BankView,
  type Embedder,
  type EncodedTexts,
  type GraphParams,
} from '@bfe/store';
import { replayEmbedder, sliceView } from '../shared/banks.js';
import { note } from '../shared/table.js';
import { quantile } from '../shared/stats.js';

export interface GraphBenchOptions {
  readonly sizes: readonly number[];
  readonly queries: number;
  readonly jitter: number;
  readonly threads?: number;
  readonly work: string;
}

const PARAMS: GraphParams = { M: 16, efConstruction: 128, efSearch: 128, kind: 'f16', threads: 1 };
const load = (): string => loadavg()[0]!.toFixed(2);
const ms = (t0: number): number => performance.now() - t0;
const p = (xs: readonly number[]): string =>
  `${quantile(xs, 0.5).toFixed(1)} / ${quantile(xs, 0.9).toFixed(1)}`;

/** Table head of {@link graphSearchRows}. */
export const GRAPH_HEAD = [
  'memories',
  'tokens',
  'queries',
  'HNSW search p50/p90 ms',
  'exact search p50/p90 ms',
  'exact/HNSW p50',
  'R@10 agreement',
  'token recall@64',
  'build s (tokens/s)',
  'graph MiB',
  'save / load s',
  'load',
];

/** Moves every copy (row ≥ `real`) by noise of norm `jitter` and renormalises. */
function jitterCopies(view: BankView, real: number, jitter: number, seed: number): void {
  const rand = rng(seed);
  const { dim } = view;
  const move = (v: Float32Array, at: number): void => {
    let nn = 0;
    const noise = new Float32Array(dim);
    for (let j = 0; j < dim; j++) nn += (noise[j] = rand() - 0.5) ** 2;
    const scale = jitter / Math.sqrt(nn);
    let n2 = 0;
    for (let j = 0; j < dim; j++) n2 += (v[at + j] = v[at + j]! + noise[j]! * scale) ** 2;
    const inv = 1 / Math.sqrt(n2);
    for (let j = 0; j < dim; j++) v[at + j] = v[at + j]! * inv;
  };
  const from = view.tokenOffsets[real]!;
  const tokens = view.tokenOffsets[view.ids.length]!;
  for (let t = from; t < tokens; t++) move(view.tokenVectors, t * dim);
  for (let m = real; m < view.ids.length; m++) move(view.pooled, m * dim);
}

function tokenRecall(
  got: { tokens: Int32Array; k: number },
  want: { tokens: Int32Array; k: number; rows: number },
) {
  let hit = 0;
  for (let r = 0; r < want.rows; r++) {
    const mine = new Set(got.tokens.subarray(r * got.k, (r + 1) * got.k));
    for (let h = 0; h < want.k; h++) if (mine.has(want.tokens[r * want.k + h]!)) hit++;
  }
  return hit / want.tokens.length;
}

/** Builds `view`'s graph a chunk at a time (as the store's background build does). */
async function buildGraph(
  view: BankView & { seqs: Float64Array },
): Promise<{ graph: BankGraph; seconds: number }> {
  const graph = await BankGraph.create(view.bank, view.dim, PARAMS);
  const n = view.ids.length;
  const t0 = performance.now();
  let next = 0.1;
  for (let from = 0; from < n;) {
    let to = from + 1;
    while (to < n && view.tokenOffsets[to]! - view.tokenOffsets[from]! < 8192) to++;
    await graph.addRows(view, from, to);
    from = to;
    if (from / n >= next) {
      note(
        `  graph build ${Math.round((100 * from) / n)} % (${((performance.now() - t0) / 1000).toFixed(0)} s, load ${load()})`,
      );
      next += 0.1;
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { graph, seconds: (performance.now() - t0) / 1000 };
}

/** One row per size: HNSW vs exact search of one query, agreement, recall, build, files. */
export async function graphSearchRows(
  all: EncodedTexts,
  texts: readonly string[],
  queryTexts: readonly string[],
  embedder: Embedder,
  options: GraphBenchOptions,
): Promise<string[][]> {
  const stride = Math.max(1, Math.floor(queryTexts.length / options.queries));
  const queries = queryTexts.filter((_, i) => i % stride === 0).slice(0, options.queries);
  const threads = options.threads === undefined ? {} : { threads: options.threads };
  const scorer = await SparseScorer.open(threads);
  const exactFactory = residentIndexFactory(threads);
  const out: string[][] = [];
  const m = texts.length;
  try {
    for (const size of options.sizes) {
      const rows = Array.from({ length: size }, (_, i) => i % m);
      const ids = rows.map((r, i) => (i < m ? `m${r}` : `m${r}~${Math.floor(i / m)}`));
      const base = sliceView(all, rows, `size-${size}`, ids, texts);
      jitterCopies(base, Math.min(m, size), options.jitter, size);
      const view = { ...base, seqs: Float64Array.from({ length: size }, (_, i) => i) };
      const tokens = view.tokenOffsets[size]!;
      note(`graph: ${size} memories, ${tokens} tokens: building …`);
      const { graph, seconds: buildS } = await buildGraph(view);
      const exact = new ExactTokenIndex(
        {
          tokens: flatTokenStore(view.tokenVectors, view.dim),
          tokenOffsets: view.tokenOffsets,
          ids: view.ids,
        },
        scorer.kernel,
      );
      const hnsw = new GraphTokenIndex(view, graph, exact, { maxMissing: 0, maxForeign: 0 });
      const timed = { hnsw: [] as number[], exact: [] as number[] };
      let agree = 0;
      let recall = 0;
      const every = Int32Array.from({ length: size }, (_, i) => i);
      for (let qi = -1; qi < queries.length; qi++) {
        const q = await embedder.encode([queries[Math.max(0, qi)]!], 'query');
        const calls = [
          ['hnsw', () => searchView(view, q, { k: 10, index: () => hnsw }, scorer)],
          ['exact', () => searchView(view, q, { k: 10, index: exactFactory }, scorer)],
        ] as const;
        const got: Record<string, string[]> = {};
        for (let c = 0; c < 2; c++) {
          const [name, call] = calls[(c + Math.max(0, qi)) % 2]!;
          const t0 = performance.now();
          const res = await call();
          if (qi >= 0) timed[name].push(ms(t0));
          got[name] = res.map((r) => r.id);
        }
        if (qi < 0) continue;
        const mine = new Set(got.hnsw);
        agree += got.exact!.filter((id) => mine.has(id)).length / got.exact!.length;
        const nq = q.tokenOffsets[1]!;
        const qt = q.tokenVectors.subarray(0, nq * q.dim);
        if (nq > 0) {
          const want = await exact.search(qt, nq, 64, { memories: every, clampK: true });
          recall += tokenRecall(
            await hnsw.search(qt, nq, 64, { memories: every, clampK: true }),
            want,
          );
        }
      }
      const file = join(options.work, `graph-${size}.usearch`);
      const t1 = performance.now();
      await graph.save(file);
      const saveS = ms(t1) / 1000;
      const bytes = (await stat(file)).size;
      const t2 = performance.now();
      const loaded = await loadIncrementalHnsw(file, view.dim, PARAMS, { kind: PARAMS.kind });
      const loadS = ms(t2) / 1000;
      if (loaded.size !== graph.tokens) throw new Error('the saved graph lost vectors');
      loaded.dispose();
      await rm(file, { force: true });
      graph.dispose();
      const row = [
        String(size),
        String(tokens),
        String(queries.length),
        p(timed.hnsw),
        p(timed.exact),
        `${(quantile(timed.exact, 0.5) / quantile(timed.hnsw, 0.5)).toFixed(1)}×`,
        (agree / queries.length).toFixed(3),
        (recall / queries.length).toFixed(4),
        `${buildS.toFixed(1)} (${(tokens / buildS).toFixed(0)})`,
        (bytes / 2 ** 20).toFixed(0),
        `${saveS.toFixed(2)} / ${loadS.toFixed(2)}`,
        load(),
      ];
      note(row.join(' | '));
      out.push(row);
    }
  } finally {
    await exactFactory.dispose();
    await scorer.dispose();
  }
  return out;
}

/** Table head of {@link graphAddRows}. */
export const GRAPH_ADD_HEAD = [
  'measure',
  'memories',
  'with graph',
  'exact policy',
  'graph/exact time',
  'load',
];

/**
 * Add throughput into a bank above the threshold (its first `base` memories, ~3,000 LoCoMo
 * memories ≈ 100k tokens), graph maintained vs `exact`; then the reopen times.
 */
export async function graphAddRows(
  all: EncodedTexts,
  texts: readonly string[],
  embedder: Embedder,
  options: GraphBenchOptions & { readonly base: number; readonly added: number },
): Promise<string[][]> {
  const replay = replayEmbedder(embedder, texts, all);
  const rows: string[][] = [];
  const dirs = { graph: join(options.work, 'graph-add'), exact: join(options.work, 'exact-add') };
  const seconds: Record<string, number> = {};
  const lagging: Record<string, number[]> = {};
  const caughtUp: Record<string, number[]> = {};
  const item = (i: number) => ({ id: `m${i}`, bank: 'big', text: texts[i]! });
  for (const policy of ['graph', 'exact'] as const) {
    await mkdir(dirs[policy], { recursive: true });
    const index = storeIndexFactory({ exact: policy === 'exact' });
    const store = await MemoryStore.open(dirs[policy], {
      embedder: replay,
      index,
      compactSegments: 0,
    });
    for (let i = 0; i < options.base; i += 256)
      await store.add(
        Array.from({ length: Math.min(256, options.base - i) }, (_, j) => item(i + j)),
      );
    await store.search({ bank: 'big', query: texts[0]!, k: 1 }); // starts the graph build
    const t0 = performance.now();
    await index.graphsSettled();
    if (policy === 'graph')
      note(
        `graph-add: built the graph of ${options.base} memories in ${(ms(t0) / 1000).toFixed(1)} s`,
      );
    const addFrom = async (from: number): Promise<void> => {
      for (let i = from; i < from + options.added; i += 32)
        await store.add(
          Array.from({ length: Math.min(32, from + options.added - i) }, (_, j) => item(i + j)),
        );
    };
    const t1 = performance.now();
    await addFrom(options.base);
    seconds[policy] = ms(t1) / 1000;
    const t2 = performance.now();
    await index.graphsSettled();
    seconds[`${policy} caught up`] = ms(t2) / 1000;
    // As many adds again, then searches one after another while the graph applies them.
    await addFrom(options.base + options.added);
    let settled = false;
    const settling = index.graphsSettled().then(() => (settled = true));
    const searched: number[] = [];
    for (let q = 0; q < 200 && (searched.length < 5 || (policy === 'graph' && !settled)); q++) {
      const t = performance.now();
      await store.search({ bank: 'big', query: texts[q % options.base]!, k: 10 });
      if (!settled || policy === 'exact') searched.push(ms(t));
    }
    await settling;
    lagging[policy] = searched;
    const after: number[] = [];
    for (let q = 0; q < 10; q++) {
      const t = performance.now();
      await store.search({ bank: 'big', query: texts[q]!, k: 10 });
      after.push(ms(t));
    }
    caughtUp[policy] = after;
    await store.close();
  }
  note(
    `graph-add: ${options.added} adds in batches of 32: graph ${seconds.graph!.toFixed(2)} s, exact ${seconds.exact!.toFixed(2)} s; graph caught up ${seconds['graph caught up']!.toFixed(2)} s after`,
  );
  rows.push([
    'add, batch 32 (memories/s)',
    String(options.added),
    (options.added / seconds.graph!).toFixed(1),
    (options.added / seconds.exact!).toFixed(1),
    (seconds.graph! / seconds.exact!).toFixed(2),
    load(),
  ]);
  rows.push([
    'graph applied every add, s after the last acknowledgement',
    String(options.added),
    seconds['graph caught up']!.toFixed(2),
    seconds['exact caught up']!.toFixed(2),
    '',
    load(),
  ]);
  const p50 = (xs: readonly number[]): number => quantile([...xs], 0.5);
  rows.push([
    `search p50 ms (store.search, encodings replayed) while the graph applies ${options.added} adds (${lagging.graph!.length} searches)`,
    String(options.base + 2 * options.added),
    p50(lagging.graph!).toFixed(1),
    p50(lagging.exact!).toFixed(1),
    (p50(lagging.graph!) / p50(lagging.exact!)).toFixed(2),
    load(),
  ]);
  rows.push([
    'search p50 ms (store.search, encodings replayed), graph caught up',
    String(options.base + 2 * options.added),
    p50(caughtUp.graph!).toFixed(1),
    p50(caughtUp.exact!).toFixed(1),
    (p50(caughtUp.graph!) / p50(caughtUp.exact!)).toFixed(2),
    load(),
  ]);
  const reopen = async (dir: string, exact: boolean): Promise<number> => {
    const index = storeIndexFactory({ exact });
    const t0 = performance.now();
    const store = await MemoryStore.open(dir, { embedder: replay, index, compactSegments: 0 });
    await store.search({ bank: 'big', query: texts[0]!, k: 1 });
    await index.graphsSettled();
    const s = ms(t0) / 1000;
    const opened = index.graphStats().opened.big ?? 'none';
    note(
      `reopen ${dir}: ${s.toFixed(2)} s, graph ${opened}, topped up ${index.graphStats().toppedUpTokens} tokens`,
    );
    await store.close({ flush: false });
    return s;
  };
  const exactS = await reopen(dirs.exact, true);
  const loadedS = await reopen(dirs.graph, false);
  rows.push([
    'reopen + first search, graph loaded',
    String(options.base + 2 * options.added),
    loadedS.toFixed(2),
    exactS.toFixed(2),
    (loadedS / exactS).toFixed(2),
    load(),
  ]);
  await rm(join(dirs.graph, GRAPHS_DIR), { recursive: true, force: true });
  const rebuiltS = await reopen(dirs.graph, false);
  rows.push([
    'reopen + first search, graph rebuilt',
    String(options.base + 2 * options.added),
    rebuiltS.toFixed(2),
    exactS.toFixed(2),
    (rebuiltS / exactS).toFixed(2),
    load(),
  ]);
  await rm(options.work + '/graph-add', { recursive: true, force: true });
  await rm(options.work + '/exact-add', { recursive: true, force: true });
  return rows;
}
