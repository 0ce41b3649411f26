/**
 * bfe's HNSW vs faiss-cpu at matched recall, on the same vectors and query rows (the first `n`
 * tokens of a `--hnsw-build` directory, its query rows), one thread on every side:
 *
 * - **usearch (raw)**: the graph `@bfe/index`'s `buildHnsw` builds (usearch, inner product, f32,
 *   rows inserted in its seeded shuffled order), every query row in one batch; the usearch
 *   index reloaded per efSearch; `raw i8`: the same build with i8 vectors (usearch's cast),
 *   its own top-k (no rescoring);
 * - **bfe TokenIndex**: the same graph files through `HnswTokenIndex.load`, one query (its rows)
 *   per call, `proposalsFor(k, overFetch)` proposals rescored in float64 from the stored fp32
 *   codes — what bfe runs: `bfe f32` (today's default), `bfe i8 ×f` (the i8 graph proposes
 *   `ceil(f · k) + 16`), `bfe i8r ×f` / `bfe f16r ×1` (the f32 graph's links with i8 / f16
 *   vectors, `rekindHnswFile`);
 *   each row's `coverage` is the share of the exact top-k among the proposals, which the
 *   rescored top-k recall equals (an exact rescoring loses nothing it was given);
 * - **faiss IndexHNSWFlat** (same M / efConstruction, inner product) and **faiss IVF-PQ**
 *   (48 B/token, nlist 4√n), by `python/index_peers.py --serve`: built once, then each
 *   efSearch timed right before and right after bfe's sides at that efSearch (its QPS the
 *   better of the two; both in `faiss.hnswTimed`), so load drift hits every side alike.
 *
 * Recall@k of every side against one reference (exact fp32 top-k, onnxruntime). Queries per
 * second are query rows (tokens) per second, best of three passes. bfe / faiss at equal
 * recall: bfe's QPS interpolated linearly in recall between its sweep points, at each faiss
 * point's recall.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  HnswTokenIndex,
  OrtSimilarityKernel,
  buildHnsw,
  exactTopK,
  flatBankSource,
  loadHnsw,
  proposalsFor,
  rekindHnswFile,
  trainCodec,
} from '@bfe/index';
import usearch from 'usearch';
import { recallAt } from './measure.js';
import { loadavg, readF32, readMeta } from './scale.js';

const { Index, MetricKind, ScalarKind } = usearch;

export interface SweepPoint {
  readonly ef: number;
  readonly qps: number;
  readonly recall: number;
  /** bfe rows: the share of the exact top-k among the graph's proposals. */
  readonly coverage?: number;
}

/** `y` at `x` by linear interpolation over points sorted by `x`; undefined outside their range. */
export function interpolate(
  points: readonly { x: number; y: number }[],
  x: number,
): number | undefined {
  const s = [...points].sort((a, b) => a.x - b.x);
  if (s.length === 0 || x < s[0]!.x || x > s.at(-1)!.x) return undefined;
  for (let i = 1; i < s.length; i++) {
    const a = s[i - 1]!;
    const b = s[i]!;
    if (x <= b.x)
      return b.x === a.x ? Math.max(a.y, b.y) : a.y + ((x - a.x) / (b.x - a.x)) * (b.y - a.y);
  }
  return s.at(-1)!.y;
}

/**
 * The best QPS `points` reach at recall ≥ `recall`, interpolated on the upper envelope: for a
 * faiss point of recall r, bfe's QPS at r (undefined when bfe never reaches r).
 */
export function qpsAtRecall(points: readonly SweepPoint[], recall: number): number | undefined {
  // The upper envelope: as recall rises QPS can only fall, so keep the Pareto points.
  const pareto = points.filter(
    (p) => !points.some((o) => o !== p && o.recall >= p.recall && o.qps > p.qps),
  );
  const exact = pareto.filter((p) => p.recall >= recall);
  if (exact.length === 0) return undefined;
  const direct = interpolate(
    pareto.map((p) => ({ x: p.recall, y: p.qps })),
    recall,
  );
  return direct ?? Math.max(...exact.map((p) => p.qps));
}

function best(passes: number, run: () => void): number {
  let bestS = Infinity;
  for (let p = 0; p < passes; p++) {
    const t0 = performance.now();
    run();
    bestS = Math.min(bestS, (performance.now() - t0) / 1000);
  }
  return bestS;
}

export interface SweepOptions {
  /** Where `sweep-<n>/` goes (graphs, vectors for the Python peer); default the build folder. */
  readonly work?: string;
  /** Over-fetch factors of the i8 graphs' bfe rows. */
  readonly overFetch: readonly number[];
  /** Threads of a graph build (default 1; searches are always one thread). */
  readonly buildThreads?: number;
}

type Usearch = InstanceType<typeof Index>;

export async function matchedSweep(
  dir: string,
  n: number,
  efs: readonly number[],
  nprobes: readonly number[],
  python: string,
  k: number,
  options: SweepOptions = { overFetch: [1, 2] },
): Promise<object> {
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const work = join(options.work ?? dir, `sweep-${n}`);
  mkdirSync(work, { recursive: true });
  const x = readF32(join(dir, 'vectors.f32'), n * dim);
  const q = readF32(join(dir, 'queries.f32'), meta.queries * rows * dim);
  const R = meta.queries * rows;
  const kernel = new OrtSimilarityKernel();
  const want = (await exactTopK(kernel, q, R, flatBankSource(x, dim), { k })).indices;
  await kernel.dispose();
  writeFileSync(join(work, 'bank.f32'), new Uint8Array(x.buffer));
  writeFileSync(join(work, 'queries.f32'), new Uint8Array(q.buffer));
  writeFileSync(join(work, 'exact.i32'), new Uint8Array(Int32Array.from(want).buffer));

  const config = (ef: number, kind: 'f32' | 'i8'): ConstructorParameters<typeof Index>[0] => ({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: kind === 'f32' ? ScalarKind.F32 : ScalarKind.I8,
    connectivity: meta.M,
    expansion_add: meta.efConstruction,
    expansion_search: ef,
    multi: false,
  });
  // The graphs, once per folder: f32 and i8 as bfe builds them (`buildHnsw`: usearch, rows
  // inserted in its seeded shuffled order), and the f32 graph's links with i8 / f16 vectors.
  const buildS: Record<string, number> = {};
  for (const kind of ['f32', 'i8'] as const) {
    const file = join(work, kind, 'all.usearch');
    if (existsSync(file)) continue;
    mkdirSync(join(work, kind), { recursive: true });
    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: efs[0]! };
    const t0 = performance.now();
    const built = await buildHnsw(x, n, dim, params, {
      kind,
      threads: options.buildThreads ?? 1,
    });
    buildS[kind] = (performance.now() - t0) / 1000;
    await built.save(file);
    built.dispose();
    process.stderr.write(`  built ${kind} in ${buildS[kind].toFixed(1)} s (${loadavg()})\n`);
  }
  for (const kind of ['i8', 'f16'] as const) {
    const file = join(work, `${kind}r`, 'all.usearch');
    if (existsSync(file)) continue;
    mkdirSync(join(work, `${kind}r`), { recursive: true });
    await rekindHnswFile(join(work, 'f32', 'all.usearch'), file, kind, dim);
  }

  const memories = Math.ceil(n / meta.memoryTokens);
  const side = {
    model: trainCodec('fp32', x, 1, dim),
    codes: new Uint8Array(x.buffer, 0, n * dim * 4),
    tokenOffsets: Int32Array.from({ length: memories + 1 }, (_, m) =>
      Math.min(n, m * meta.memoryTokens),
    ),
  };
  const cands = Int32Array.from({ length: memories }, (_, m) => m);
  const sweeps = new Map<string, SweepPoint[]>();
  const push = (name: string, p: SweepPoint): void => {
    sweeps.set(name, [...(sweeps.get(name) ?? []), p]);
  };
  const rawRow = (index: Usearch, ef: number, name: string): void => {
    let res = index.search(q, k, 1);
    const secs = best(3, () => (res = index.search(q, k, 1)));
    const got = Int32Array.from(res.keys, (v) => Number(v));
    push(name, { ef, qps: R / secs, recall: recallAt(got, want, R, k) });
  };
  const apiRow = async (
    graph: 'f32' | 'i8' | 'i8r' | 'f16r',
    overFetch: number,
    ef: number,
    name: string,
  ): Promise<void> => {
    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
    const kind = graph === 'f32' ? 'f32' : graph === 'f16r' ? 'f16' : 'i8';
    const tokenIndex = await HnswTokenIndex.load(join(work, graph), side, params, {
      threads: 1,
      kind,
      overFetch,
    });
    const tokens = new Int32Array(R * k);
    const once = async (): Promise<number> => {
      const s = performance.now();
      for (let i = 0; i < meta.queries; i++) {
        const hits = await tokenIndex.search(q.subarray(i * rows * dim), rows, k, {
          memories: cands,
        });
        tokens.set(hits.tokens, i * rows * k);
      }
      return (performance.now() - s) / 1000;
    };
    let apiS = Infinity;
    for (let p = 0; p < 3; p++) apiS = Math.min(apiS, await once());
    tokenIndex.dispose();
    // The proposals' coverage of the exact top-k: the same graph asked for as many.
    const raw = await loadHnsw(join(work, graph, 'all.usearch'), dim, params, { threads: 1, kind });
    const fetch = proposalsFor(k, overFetch);
    const proposed = raw.search(q, R, fetch).indices;
    raw.dispose();
    let covered = 0;
    for (let r = 0; r < R; r++) {
      const have = new Set(proposed.subarray(r * fetch, (r + 1) * fetch));
      for (let j = 0; j < k; j++) if (have.has(want[r * k + j]!)) covered++;
    }
    const recall = recallAt(tokens, want, R, k);
    push(name, { ef, qps: R / apiS, recall, coverage: covered / (R * k) });
  };
  // faiss in the same minutes: its server (built once) times each efSearch right before and
  // right after bfe's sides at that efSearch; its QPS there is the better of the two.
  const script = new URL('../../python/index_peers.py', import.meta.url).pathname;
  const peer = spawnPeer(python, [
    script,
    '--serve',
    join(work, 'bank.f32'),
    join(work, 'queries.f32'),
    join(work, 'exact.i32'),
    String(dim),
    String(k),
    String(meta.M),
    String(meta.efConstruction),
    efs.join(','),
    nprobes.join(','),
  ]);
  await peer.next(); // ready
  const faissAt = async (ef: number): Promise<SweepPoint> => {
    peer.send(`ef ${ef}`);
    return JSON.parse(await peer.next()) as SweepPoint;
  };
  const faissPoints: SweepPoint[] = [];
  for (const ef of efs) {
    const before = await faissAt(ef);
    for (const kind of ['f32', 'i8'] as const) {
      const index = new Index(config(ef, kind));
      index.load(join(work, kind, 'all.usearch'));
      rawRow(index, ef, `raw ${kind}`);
    }
    await apiRow('f32', 1, ef, 'bfe f32');
    await apiRow('f16r', 1, ef, 'bfe f16r ×1');
    for (const f of options.overFetch) {
      await apiRow('i8', f, ef, `bfe i8 ×${f}`);
      await apiRow('i8r', f, ef, `bfe i8r ×${f}`);
    }
    const after = await faissAt(ef);
    faissPoints.push({ ...after, qps: Math.max(before.qps, after.qps) });
    process.stderr.write(`  ef ${ef} (${loadavg()})\n`);
  }
  peer.send('end');
  const served = JSON.parse(await peer.next()) as { hnsw: SweepPoint[]; hnsw_build_s: number };
  const faiss = { ...served, hnsw: faissPoints, hnswTimed: served.hnsw };
  // bfe's i8 graph at its best setting per recall: the points of every over-fetch together (a
  // user picks efSearch and over-fetch for the recall they need).
  if (options.overFetch.length > 1) {
    const any = [...sweeps].filter(([name]) => name.startsWith('bfe i8 ×')).flatMap(([, p]) => p);
    sweeps.set('bfe i8 (any setting)', any);
  }
  const ratios = faiss.hnsw.map((f) => ({
    ef: f.ef,
    recall: f.recall,
    faissQps: f.qps,
    ...Object.fromEntries(
      [...sweeps].map(([name, points]) => [name, (qpsAtRecall(points, f.recall) ?? NaN) / f.qps]),
    ),
  }));
  const sides = Object.fromEntries(sweeps);
  return { tokens: n, rows: R, k, threads: 1, buildS, sides, faiss, ratios, load: loadavg() };
}

/** A line-oriented child process: `next()` resolves with its next stdout line. */
function spawnPeer(
  command: string,
  args: string[],
): { send: (line: string) => void; next: () => Promise<string> } {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let failed: Error | undefined;
  const rejects: ((e: Error) => void)[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const w = waiting.shift();
    rejects.shift();
    if (w === undefined) lines.push(line);
    else w(line);
  });
  child.on('exit', (code) => {
    failed = new Error(`${command} exited with ${code}`);
    for (const r of rejects.splice(0)) r(failed);
    waiting.length = 0;
  });
  return {
    send: (line) => void child.stdin.write(`${line}\n`),
    next: () =>
      lines.length > 0
        ? Promise.resolve(lines.shift()!)
        : failed !== undefined
          ? Promise.reject(failed)
          : new Promise((resolve, reject) => {
              waiting.push(resolve);
              rejects.push(reject);
            }),
  };
}
