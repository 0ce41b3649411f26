/**
 * bfe's HNSW vs faiss-cpu at matched recall, on the same vectors and query rows (the first `n`
 * tokens of a `--hnsw-build` directory, its query rows), one thread on every side:
 *
 * - **usearch (raw)**: the graph `@bfe/index`'s `buildHnsw` builds (usearch, inner product, f32),
 *   every query row in one batch; the usearch index reloaded per efSearch;
 * - **bfe TokenIndex**: the same graph file through `HnswTokenIndex.load`, one query (its rows)
 *   per call, k + 16 proposals rescored in float64 — what bfe runs;
 * - **faiss IndexHNSWFlat** (same M / efConstruction, inner product) and **faiss IVF-PQ**
 *   (48 B/token, nlist 4√n), by `python/index_peers.py --sweep`.
 *
 * Recall@k of every side against one reference (exact fp32 top-k, onnxruntime). Queries per
 * second are query rows (tokens) per second, best of three passes. bfe / faiss at equal
 * recall: bfe's QPS interpolated linearly in recall between its sweep points, at each faiss
 * point's recall.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  HnswTokenIndex,
  OrtSimilarityKernel,
  exactTopK,
  flatBankSource,
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

export async function matchedSweep(
  dir: string,
  n: number,
  efs: readonly number[],
  nprobes: readonly number[],
  python: string,
  k: number,
): Promise<object> {
  const meta = readMeta(dir);
  const { dim, rows } = meta;
  const work = join(dir, `sweep-${n}`);
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

  const config = (ef: number): ConstructorParameters<typeof Index>[0] => ({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: ScalarKind.F32,
    connectivity: meta.M,
    expansion_add: meta.efConstruction,
    expansion_search: ef,
    multi: false,
  });
  const built = new Index(config(efs[0]!));
  const keys = BigUint64Array.from({ length: n }, (_, i) => BigInt(i));
  const t0 = performance.now();
  built.add(keys, x, 1);
  const buildS = (performance.now() - t0) / 1000;
  mkdirSync(join(work, 'hnsw'), { recursive: true });
  built.save(join(work, 'hnsw', 'all.usearch'));

  const raw: SweepPoint[] = [];
  const api: SweepPoint[] = [];
  const memories = Math.ceil(n / meta.memoryTokens);
  const side = {
    model: trainCodec('fp32', x, 1, dim),
    codes: new Uint8Array(x.buffer, 0, n * dim * 4),
    tokenOffsets: Int32Array.from({ length: memories + 1 }, (_, m) =>
      Math.min(n, m * meta.memoryTokens),
    ),
  };
  const cands = Int32Array.from({ length: memories }, (_, m) => m);
  for (const ef of efs) {
    const index = new Index(config(ef));
    index.load(join(work, 'hnsw', 'all.usearch'));
    let res = index.search(q, k, 1);
    const secs = best(3, () => (res = index.search(q, k, 1)));
    const got = Int32Array.from(res.keys, (v) => Number(v));
    raw.push({ ef, qps: R / secs, recall: recallAt(got, want, R, k) });

    const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
    const tokenIndex = await HnswTokenIndex.load(join(work, 'hnsw'), side, params, { threads: 1 });
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
    api.push({ ef, qps: R / apiS, recall: recallAt(tokens, want, R, k) });
    process.stderr.write(`  ef ${ef}: raw ${raw.at(-1)!.recall.toFixed(4)} (${loadavg()})\n`);
  }
  const script = new URL('../../python/index_peers.py', import.meta.url).pathname;
  const faiss = JSON.parse(
    execFileSync(
      python,
      [
        script,
        '--sweep',
        join(work, 'bank.f32'),
        join(work, 'queries.f32'),
        join(work, 'exact.i32'),
        String(dim),
        String(k),
        String(meta.M),
        String(meta.efConstruction),
        efs.join(','),
        nprobes.join(','),
      ],
      { encoding: 'utf8', maxBuffer: 1 << 24 },
    )
      .trim()
      .split('\n')
      .at(-1)!,
  ) as { hnsw: SweepPoint[]; hnsw_build_s: number };
  const ratios = faiss.hnsw.map((f) => ({
    ef: f.ef,
    recall: f.recall,
    faissQps: f.qps,
    rawOverFaiss: (qpsAtRecall(raw, f.recall) ?? NaN) / f.qps,
    apiOverFaiss: (qpsAtRecall(api, f.recall) ?? NaN) / f.qps,
  }));
  return { tokens: n, rows: R, k, threads: 1, buildS, raw, api, faiss, ratios, load: loadavg() };
}
