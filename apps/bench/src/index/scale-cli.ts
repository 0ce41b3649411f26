/**
 * `pnpm bench:big-bank --hnsw-build | --peer-sweep | --filtering`: the HNSW scale bench
 * (scale.ts) on a tiled bank (noisy copies of an encoded LoCoMo bank's states).
 *
 * Build once (one growing graph saved at each checkpoint, exact fp32 reference per checkpoint,
 * each reference in its own child process so that its peak RSS is its own):
 *   pnpm bench:big-bank --hnsw-build --bank <encoded LoCoMo bank dir> --index <tiled dir>
 * bfe vs faiss at matched recall on the first `--tokens` tokens (matched.ts):
 *   pnpm bench:big-bank --peer-sweep --index <tiled dir> --tokens 100000 \
 *     --ef-search 64,96,128,192,256 [--graphs <dir for sweep-<n>/>] [--over-fetch 1,2]
 * Per-bank graphs against one filtered graph (filtering.ts):
 *   pnpm bench:big-bank --filtering --shapes locomo,longmemeval,1000-banks --bank <LoCoMo bank>
 *     --index <tiled dir>
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { printJson } from '../shared/table.js';
import { bankDir, type BigBankOptions } from './big-bank-cli.js';
import { locomoBank } from './banks.js';
import { filterShape } from './filtering.js';
import type { ShapeBank } from './filtering.js';
import { matchedSweep } from './matched.js';
import { buildScale, exactPhase, loadavg, readF32, readMeta } from './scale.js';

const K = 64;

/** The exact fp32 reference over the first `tokens` tokens in a child process; its JSON line. */
function exactChild(o: BigBankOptions, tokens: number): object[] {
  const script = fileURLToPath(new URL('./big-bank.ts', import.meta.url));
  const args = ['--hnsw-build', '--index', o.index, '--phase', `exact:${tokens}`];
  const r = spawnSync(process.execPath, [...process.execArgv, script, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`exact:${tokens} failed (${r.status}): ${r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as object[];
}

export async function runScale(o: BigBankOptions): Promise<void> {
  const dir = o.index;
  if (o.phase !== undefined) {
    const [what, tokens] = o.phase.split(':');
    if (what !== 'exact') throw new Error(`unknown phase ${o.phase}`);
    printJson([await exactPhase(dir, Number(tokens), K)]);
    return;
  }
  if (o.filtering === true) {
    await filtering(o, dir);
    return;
  }
  if (o.peerSweep === true) {
    const out = await matchedSweep(dir, o.tokens, o.efSearch, o.nprobe, o.python, K, {
      ...(o.graphs === undefined ? {} : { work: o.graphs }),
      overFetch: o.overFetch,
      buildThreads: o.threads,
    });
    printJson(out);
    return;
  }
  const { checkpoints } = o;
  process.stderr.write(`building ${checkpoints.join(' → ')} tokens in ${dir} (${loadavg()})\n`);
  const meta = await buildScale({
    bank: bankDir(o),
    dir,
    checkpoints,
    params: { M: o.M, efConstruction: o.efConstruction },
    queries: o.queries,
    rows: o.rows,
    noise: o.noise,
    threads: o.threads,
    seed: 7,
  });
  printJson(meta);
  for (const c of checkpoints) printJson(exactChild(o, c));
}

/** The tiled bank cut into `banks` banks of whole 20-token memories; `queries` of its queries. */
function tiledShape(dir: string, n: number, tokensPerBank: number, queries: number): ShapeBank {
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const perMemory = meta.memoryTokens;
  const memories = Math.ceil(n / perMemory);
  const memoriesPerBank = Math.round(tokensPerBank / perMemory);
  const banks = Math.ceil(memories / memoriesPerBank);
  const q = readF32(join(dir, 'queries.f32'), meta.queries * rows * dim);
  return {
    vectors: readF32(join(dir, 'vectors.f32'), n * dim),
    n,
    dim,
    tokenOffsets: Int32Array.from({ length: memories + 1 }, (_, m) => Math.min(n, m * perMemory)),
    memoryBank: Int32Array.from({ length: memories }, (_, m) => Math.floor(m / memoriesPerBank)),
    queries: Array.from({ length: Math.min(queries, meta.queries) }, (_, i) => ({
      tokens: q.slice(i * rows * dim, (i + 1) * rows * dim),
      rows,
      bank: Math.floor(((i + 0.5) * (banks - 1)) / queries),
    })),
  };
}

async function filtering(o: BigBankOptions, dir: string): Promise<void> {
  const params = { M: o.M, efConstruction: o.efConstruction, efSearch: o.efSearch[0]! };
  const { threads, shapes } = o;
  const work = join(dir, 'filtering');
  const print = (rows: object[]): void => rows.forEach(printJson);
  if (shapes.includes('locomo')) {
    const lb = await locomoBank(bankDir(o), o.queries);
    const memories = lb.tokenMemory[lb.n - 1]! + 1;
    const tokenOffsets = new Int32Array(memories + 1);
    const memoryBank = new Int32Array(memories).fill(-1);
    for (let t = 0; t < lb.n; t++) {
      tokenOffsets[lb.tokenMemory[t]! + 1] = t + 1;
      memoryBank[lb.tokenMemory[t]!] = lb.tokenBank[t]!;
    }
    for (let m = 1; m <= memories; m++)
      tokenOffsets[m] = Math.max(tokenOffsets[m]!, tokenOffsets[m - 1]!);
    const b = {
      vectors: lb.vectors,
      n: lb.n,
      dim: lb.dim,
      tokenOffsets,
      memoryBank,
      queries: lb.queries,
    };
    print(await filterShape('locomo', b, params, K, { threads, work, sampleBanks: false }));
  }
  const meta = readMeta(dir);
  // The filtered graph: a saved checkpoint (`--filter-tokens`, default the largest).
  const n = o.filterTokens ?? meta.tokens;
  const globalDir = join(dir, `hnsw-${n}`);
  const global = meta.checkpoints.find((c) => c.tokens === n);
  if (global === undefined) throw new Error(`no saved checkpoint of ${n} tokens in ${dir}`);
  for (const [shape, perBank] of [
    ['longmemeval', 3700],
    ['1000-banks', Math.round(n / 1000)],
  ] as const) {
    if (!shapes.includes(shape)) continue;
    const b = tiledShape(dir, n, perBank, o.filterQueries);
    const rows = await filterShape(shape, b, params, K, {
      threads,
      work,
      sampleBanks: true,
      globalDir,
    });
    // The filtered graph is the saved build: its build time is the build's, not the load's.
    print(
      rows.map((r) =>
        r.strategy === 'filtered' ? { ...r, loadS: r.buildS, buildS: global.cumulativeBuildS } : r,
      ),
    );
  }
}
