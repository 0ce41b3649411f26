/**
 * `pnpm bench:index-build`: a benchmark, not a test. Whether the HNSW graphs of the experiment's
 * index stage come out byte for byte the same when built again, and what a threaded build costs
 * and gains (METHOD.md §8, "Index backends"). On an encoded bank, builds the graphs the index
 * stage builds — fp32 codes (`trainCodec`, `encodeTokens`), one usearch graph per candidate set
 * of the dataset's queries (`groupByCandidates`, sets sorted by their rows as the stage sorts
 * them: on LoCoMo a set is a conversation), `HnswTokenIndex.buildFiles` with the Table 5
 * defaults (M 16, efConstruction 128, efSearch 128) — over the first `--sets` sets,
 * `--repeats` times at each of `--threads` (`buildThreads`; 0: all cores), each build into a
 * fresh temporary folder. Builds are interleaved (repeat 1 at every thread count, then repeat
 * 2, …), so the ratio of two thread counts is taken in the same stretch of machine load.
 *
 * Prints, per build: wall seconds, the cores other processes kept busy meanwhile, the SHA-256 of
 * every file it wrote (`set-<i>.usearch`, `layout.json`) and of their list, and token
 * recall@`--k` of the graphs (plain usearch search, efSearch) against exact float64 search over
 * the same set, on `--sample` query tokens per set drawn with a seeded shuffle from the set's
 * own queries (one sample for every build). Then per thread count: whether the repeats are
 * byte-identical, the median seconds and its ratio to the first thread count's.
 *
 *   BFE_DATA_MIRROR=<dir> pnpm bench:index-build --bank <dir>/bank [--dataset locomo] [--sets 3]
 *     [--repeats 2] [--threads 1,2] [--sample 100] [--k 64] [--seed 7] [--json]
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { terminalTableLines } from '@bfe/core';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openBank } from '@bfe/encoder';
import {
  HnswTokenIndex,
  encodeTokens,
  graphGroups,
  graphKindOf,
  loadHnsw,
  trainCodec,
  type HnswParams,
  type HnswSide,
} from '@bfe/index';
import { groupByCandidates } from '@bfe/scorer';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { nonNegative, positive } from '../shared/args.js';
import { startClock } from '../shared/machine.js';
import { note, out } from '../shared/output.js';
import { median } from '../shared/stats.js';
import { exactTopK } from './measure.js';

const { values } = parseArgs({
  options: {
    bank: { type: 'string' },
    dataset: { type: 'string', default: 'locomo' },
    sets: { type: 'string' },
    repeats: { type: 'string', default: '2' },
    threads: { type: 'string', default: '1,2' },
    sample: { type: 'string', default: '100' },
    k: { type: 'string', default: '64' },
    seed: { type: 'string', default: '7' },
    M: { type: 'string', default: '16' },
    'ef-construction': { type: 'string', default: '128' },
    'ef-search': { type: 'string', default: '128' },
    json: { type: 'boolean', default: false },
  },
});
if (values.bank === undefined) throw new Error('--bank <encoded bank folder> is required');
const repeats = positive('--repeats', values.repeats);
const threadCounts = values.threads.split(',').map((s) => nonNegative('--threads', s.trim()));
const sampleSize = positive('--sample', values.sample);
const K = positive('--k', values.k);
const seed = nonNegative('--seed', values.seed);
const params: HnswParams = {
  M: positive('--M', values.M),
  efConstruction: positive('--ef-construction', values['ef-construction']),
  efSearch: positive('--ef-search', values['ef-search']),
};

/** One build: its timing, its files' hashes and its recall. */
interface Build {
  readonly threads: number;
  readonly repeat: number;
  readonly seconds: number;
  /** Cores other processes kept busy on average during the build (null: not measurable). */
  readonly otherCores: number | null;
  /** File name → SHA-256, names sorted. */
  readonly files: Record<string, string>;
  /** SHA-256 of the `name sha256` lines: one digest for the whole build. */
  readonly sha256: string;
  readonly recall: number;
}

const sha256 = (data: Uint8Array | string): string =>
  createHash('sha256').update(data).digest('hex');

/** The sets sorted by their rows, as the index stage's `candidateSets` sorts them. */
function bySetRows(a: Int32Array, b: Int32Array): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return a.length - b.length;
}

/** `count` of `rows` (or all of them), drawn with a seeded partial Fisher–Yates, then sorted. */
function sampleRows(rows: Int32Array, count: number, rng: ReturnType<typeof xoroshiro128plus>) {
  const pool = rows.slice();
  const take = Math.min(count, pool.length);
  for (let i = 0; i < take; i++) {
    const j = i + Math.floor(uniformFloat64(rng) * (pool.length - i));
    const t = pool[i]!;
    pool[i] = pool[j]!;
    pool[j] = t;
  }
  return pool.subarray(0, take).sort();
}

note(`opening ${values.bank} …`);
const bank = await openBank(values.bank, { verifyHashes: false });
const { dim, memories, queries } = bank;
const { benchmark } = await loadDataset(values.dataset, { location: dataLocationFromEnv() });
const groups = groupByCandidates(memories, benchmark.queries)
  .map((g) => ({ rows: Int32Array.from(g.rows).sort(), queries: g.queries }))
  .sort((a, b) => bySetRows(a.rows, b.rows));
const setCount = values.sets === undefined ? groups.length : positive('--sets', values.sets);
const chosen = groups.slice(0, setCount);

// fp32 codes, as the index stage makes them (the float32 states, byte for byte).
const n = memories.tokenOffsets[memories.tokenOffsets.length - 1]!;
const tokenIdentity = { ids: memories.ids, tokenOffsets: memories.tokenOffsets };
const model = trainCodec('fp32', memories.tokenVectors, n, dim, {
  seed: 42,
  tokens: tokenIdentity,
});
const codes = encodeTokens(model, memories.tokenVectors, n);
const bankNumbers = new Map([...new Set(memories.bankIds ?? [])].sort().map((id, i) => [id, i]));
const side: HnswSide = {
  model,
  codes,
  tokenOffsets: memories.tokenOffsets,
  ids: memories.ids,
  ...(memories.bankIds === undefined
    ? {}
    : { memoryBank: Int32Array.from(memories.bankIds, (id) => bankNumbers.get(id)!) }),
  candidateSets: chosen.map((g) => g.rows),
};
const graphs = graphGroups(side);
const graphTokens = graphs.reduce((s, g) => s + g.tokens.length, 0);

// The query-token sample of each set (the set's own queries) and its exact top-k: one
// reference for every build.
const queryRow = new Map(queries.ids.map((id, row) => [id, row] as const));
const rng = xoroshiro128plus(seed);
const probes = graphs.map((g, s) => {
  const rows: number[] = [];
  for (const q of chosen[s]!.queries) {
    const row = queryRow.get(q.id);
    if (row === undefined) throw new Error(`query ${q.id} is not in the bank ${values.bank}`);
    for (let t = queries.tokenOffsets[row]!; t < queries.tokenOffsets[row + 1]!; t++) rows.push(t);
  }
  const picked = sampleRows(Int32Array.from(rows), sampleSize, rng);
  const q = new Float32Array(picked.length * dim);
  picked.forEach((t, i) => q.set(queries.tokenVectors.subarray(t * dim, (t + 1) * dim), i * dim));
  const k = Math.min(K, g.tokens.length);
  const exact = exactTopK(memories.tokenVectors, dim, g.tokens, q, picked.length, k);
  return { file: g.file, tokens: g.tokens, q, rows: picked.length, k, exact };
});
const sampled = probes.reduce((s, p) => s + p.rows, 0);

/** Token recall@k of the graphs in `dir` against the exact reference, over every sampled row. */
async function recallOf(dir: string): Promise<number> {
  let found = 0;
  let wanted = 0;
  for (const p of probes) {
    const index = await loadHnsw(join(dir, p.file), dim, params, { kind: graphKindOf('fp32') });
    try {
      const got = index.search(p.q, p.rows, p.k);
      for (let r = 0; r < p.rows; r++) {
        const truth = new Set(p.exact.subarray(r * p.k, (r + 1) * p.k));
        for (let j = 0; j < p.k; j++) {
          const key = got.indices[r * p.k + j]!;
          if (key >= 0 && truth.has(p.tokens[key]!)) found++;
        }
        wanted += p.k;
      }
    } finally {
      index.dispose();
    }
  }
  return found / wanted;
}

async function build(threads: number, repeat: number): Promise<Build> {
  const dir = await mkdtemp(join(tmpdir(), 'bfe-build-determinism-'));
  try {
    const stop = startClock();
    await HnswTokenIndex.buildFiles(dir, side, params, { buildThreads: threads });
    const t = stop();
    const files: Record<string, string> = {};
    for (const name of (await readdir(dir)).sort()) {
      files[name] = sha256(await readFile(join(dir, name)));
    }
    const lines = Object.entries(files).map(([name, h]) => `${name} ${h}\n`);
    return {
      threads,
      repeat,
      seconds: t.seconds,
      otherCores: t.otherCpuSeconds === null ? null : t.otherCpuSeconds / t.seconds,
      files,
      sha256: sha256(lines.join('')),
      recall: await recallOf(dir),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

note(
  `${graphs.length} graphs, ${graphTokens} tokens, ${sampled} sampled query tokens; ` +
    `${repeats} × threads ${threadCounts.join(',')}`,
);
const builds: Build[] = [];
for (let r = 1; r <= repeats; r++) {
  for (const threads of threadCounts) {
    const b = await build(threads, r);
    note(`threads ${threads} repeat ${r}: ${b.seconds.toFixed(1)} s, ${b.sha256.slice(0, 16)}`);
    builds.push(b);
  }
}

const summaries = threadCounts.map((threads) => {
  const own = builds.filter((b) => b.threads === threads);
  const hashes = new Set(own.map((b) => b.sha256));
  return {
    threads,
    medianSeconds: median(own.map((b) => b.seconds)),
    distinctHashes: hashes.size,
    identical: hashes.size === 1,
    recall: own.map((b) => b.recall),
  };
});
const base = summaries[0]!;
/** Per repeat, each thread count's seconds over the first thread count's (same stretch of load). */
const ratios = threadCounts.slice(1).map((threads) => ({
  threads,
  perRepeat: Array.from({ length: repeats }, (_, i) => {
    const of = (t: number) => builds.find((b) => b.threads === t && b.repeat === i + 1)!.seconds;
    return of(threads) / of(base.threads);
  }),
}));

const header = {
  bank: values.bank,
  dataset: values.dataset,
  sets: graphs.length,
  setsAvailable: groups.length,
  tokens: graphTokens,
  codec: 'fp32',
  graph: graphKindOf('fp32'),
  params,
  sampledQueryTokens: sampled,
  k: K,
  seed,
  cores: cpus().length,
};
if (values.json) {
  out(JSON.stringify({ ...header, builds, summaries, ratios }));
} else {
  out(
    `${values.dataset}: ${graphs.length} of ${groups.length} candidate sets, ${graphTokens} tokens, ` +
      `fp32 codes, f32 graphs, M ${params.M} / efConstruction ${params.efConstruction} / ` +
      `efSearch ${params.efSearch}; recall@${K} of ${sampled} sampled query tokens ` +
      `(seed ${seed}) against exact search; ${cpus().length} cores`,
  );
  out();
  for (const line of terminalTableLines({
    head: ['threads', 'repeat', 'seconds', 'other cores', `recall@${K}`, 'SHA-256 of the files'],
    align: ['right', 'right', 'right', 'right', 'right', 'left'],
    rows: builds.map((b) => [
      String(b.threads),
      String(b.repeat),
      b.seconds.toFixed(1),
      b.otherCores === null ? '–' : b.otherCores.toFixed(2),
      b.recall.toFixed(4),
      b.sha256,
    ]),
  }))
    out(line);
  out();
  for (const b of builds) {
    out(`threads ${b.threads} repeat ${b.repeat}:`);
    for (const [name, h] of Object.entries(b.files)) out(`  ${h}  ${name}`);
  }
  out();
  for (const s of summaries) {
    out(
      `threads ${s.threads}: median ${s.medianSeconds.toFixed(1)} s, ${s.distinctHashes} distinct ` +
        `hash(es) in ${repeats} builds (${s.identical ? 'byte-identical' : 'not identical'}), ` +
        `recall ${s.recall.map((x) => x.toFixed(4)).join(', ')}`,
    );
  }
  for (const r of ratios) {
    out(
      `threads ${r.threads} / threads ${base.threads}, seconds per repeat: ` +
        r.perRepeat.map((x) => x.toFixed(2)).join(', '),
    );
  }
}
