/**
 * `pnpm bench:big-bank --hnsw-build | --hnsw-latency`: the HNSW scale bench (scale.ts).
 *
 * Build once (tiled real LoCoMo token states, one growing graph saved at each checkpoint,
 * exact fp32 reference per checkpoint):
 *   pnpm bench:big-bank --hnsw-build --bank <encoded LoCoMo bank dir> --index /work/scratch/scale/tiled
 * Then, as often as wanted (one query = `--rows` tokens, k 64; each checkpoint in its own
 * child process so that its peak RSS is its own):
 *   pnpm bench:big-bank --hnsw-latency --index /work/scratch/scale/tiled [--tokens 2000000]
 * with `--graph i8 --graphs <dir> --over-fetch 2`: the same links with i8 vectors (converted
 * once into `<dir>/hnsw-<n>-i8` by `rekindHnswFile`), proposals over-fetched and rescored.
 * bfe vs faiss at matched recall on the first `--tokens` tokens (matched.ts):
 *   pnpm bench:big-bank --peer-sweep --index /work/scratch/scale/tiled --tokens 100000 \
 *     --ef-search 64,96,128,192,256 [--graphs <dir for sweep-<n>/>] [--over-fetch 1,2]
 *     [--margin 1,16] [--i8-only]
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { HnswScalarKind } from '@bfe/index';
import { locomoBank } from './banks.js';
import { filterShape } from './filtering.js';
import type { ShapeBank } from './filtering.js';
import { matchedSweep } from './matched.js';
import { buildScale, exactPhase, hnswPhase, loadavg, readF32, readMeta } from './scale.js';

type Values = Record<string, string | boolean | undefined>;
const K = 64;
const str = (v: Values, key: string): string => {
  const s = v[key];
  if (typeof s !== 'string') throw new Error(`--${key} is required`);
  return s;
};
const nums = (s: string): number[] => s.split(',').map(Number);

/** Runs `--scale-phase <what>:<tokens>` of this bench in a child process; its JSON lines. */
function child(v: Values, what: string, tokens: number): object[] {
  const script = fileURLToPath(new URL('./big-bank.ts', import.meta.url));
  const args = [
    '--hnsw-latency',
    '--index',
    str(v, 'index'),
    '--ef-search',
    str(v, 'ef-search'),
    '--threads',
    str(v, 'threads'),
    '--graph',
    str(v, 'graph'),
    '--over-fetch',
    str(v, 'over-fetch'),
    ...(typeof v.graphs === 'string' ? ['--graphs', v.graphs] : []),
    '--phase',
    `${what}:${tokens}`,
  ];
  const r = spawnSync(process.execPath, [...process.execArgv, script, ...args], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`${what}:${tokens} failed (${r.status}): ${r.stdout}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as object[];
}

function graphKind(s: string): HnswScalarKind {
  if (s !== 'f32' && s !== 'f16' && s !== 'i8') throw new Error(`--graph f32 | f16 | i8, got ${s}`);
  return s;
}

export async function runScale(v: Values): Promise<void> {
  const dir = str(v, 'index');
  const phase = v.phase;
  if (typeof phase === 'string') {
    const [what, tokens] = phase.split(':');
    const n = Number(tokens);
    const out =
      what === 'exact'
        ? [await exactPhase(dir, n, K)]
        : await hnswPhase(dir, n, K, nums(str(v, 'ef-search')), Number(str(v, 'threads')), {
            kind: graphKind(str(v, 'graph')),
            overFetch: Number(str(v, 'over-fetch')),
            ...(typeof v.graphs === 'string' ? { graphs: v.graphs } : {}),
          });
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  if (v.filtering === true) {
    await filtering(v, dir);
    return;
  }
  if (v['peer-sweep'] === true) {
    const n = Number(str(v, 'tokens'));
    const out = await matchedSweep(
      dir,
      n,
      nums(str(v, 'ef-search')),
      nums(str(v, 'nprobe')),
      str(v, 'python'),
      K,
      {
        ...(typeof v.graphs === 'string' ? { work: v.graphs } : {}),
        overFetch: nums(str(v, 'over-fetch')),
        buildThreads: Number(str(v, 'threads')),
        ...(typeof v.margin === 'string' ? { margins: nums(v.margin) } : {}),
        i8Only: v['i8-only'] === true,
      },
    );
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return;
  }
  if (v['hnsw-build'] === true) {
    const checkpoints = nums(str(v, 'checkpoints'));
    process.stderr.write(`building ${checkpoints.join(' → ')} tokens in ${dir} (${loadavg()})\n`);
    const meta = await buildScale({
      bank: str(v, 'bank'),
      dir,
      checkpoints,
      params: { M: Number(str(v, 'M')), efConstruction: Number(str(v, 'ef-construction')) },
      queries: Number(str(v, 'queries')),
      rows: Number(str(v, 'rows')),
      noise: Number(str(v, 'noise')),
      threads: Number(str(v, 'threads')),
      seed: 7,
    });
    process.stdout.write(`${JSON.stringify(meta)}\n`);
    for (const c of checkpoints) process.stdout.write(`${JSON.stringify(child(v, 'exact', c))}\n`);
    return;
  }
  const meta = readMeta(dir);
  const which =
    typeof v.tokens === 'string' && v.tokens !== '20000000'
      ? [Number(v.tokens)]
      : meta.checkpoints.map((c) => c.tokens);
  for (const n of which) {
    // The exact reference (and exact fp32 latency) once per checkpoint, if the build did not.
    if (!existsSync(join(dir, `exact-${n}.json`))) {
      process.stdout.write(`${JSON.stringify(child(v, 'exact', n))}\n`);
    }
    // One process per efSearch: a disposed usearch graph is freed only by the GC.
    for (const ef of nums(str(v, 'ef-search'))) {
      process.stdout.write(
        `${JSON.stringify(child({ ...v, 'ef-search': String(ef) }, 'hnsw', n))}\n`,
      );
    }
  }
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

async function filtering(v: Values, dir: string): Promise<void> {
  const params = {
    M: Number(str(v, 'M')),
    efConstruction: Number(str(v, 'ef-construction')),
    efSearch: Number(str(v, 'ef-search').split(',')[0]),
  };
  const threads = Number(str(v, 'threads'));
  const work = join(dir, 'filtering');
  const shapes = str(v, 'shapes').split(',');
  const print = (rows: object[]): void => {
    for (const r of rows) process.stdout.write(`${JSON.stringify(r)}\n`);
  };
  if (shapes.includes('locomo')) {
    const lb = await locomoBank(str(v, 'bank'), Number(str(v, 'queries')));
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
  const n = Number(v['filter-tokens'] ?? meta.tokens);
  const globalDir = join(dir, `hnsw-${n}`);
  const global = meta.checkpoints.find((c) => c.tokens === n);
  if (global === undefined) throw new Error(`no saved checkpoint of ${n} tokens in ${dir}`);
  for (const [shape, perBank] of [
    ['longmemeval', 3700],
    ['1000-banks', Math.round(n / 1000)],
  ] as const) {
    if (!shapes.includes(shape)) continue;
    const b = tiledShape(dir, n, perBank, Number(str(v, 'filter-queries')));
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
