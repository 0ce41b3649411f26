/**
 * Where a bfe HNSW query's time goes (issue 13, "annprof"): the same saved usearch graph (the
 * `n`-token checkpoint of a `--hnsw-build` directory) searched, one thread, through each layer
 * of bfe's path, in interleaved rounds (A B C … A B C …) so the shared machine's load hits every
 * variant alike:
 *
 * - `raw-batch`: usearch `Index.search`, every query row in one call, k;
 * - `raw-query`: one call per query (its rows), k;
 * - `raw-query-k+16`: one call per query, k + `HNSW_MARGIN` (what `HnswTokenIndex` asks for);
 * - `hnsw`: `@bfe/index`'s `loadHnsw(...).search`, one call per query, k + 16 (key unpacking);
 * - `token-index`: `HnswTokenIndex.search`, one call per query, k (float64 rescoring, slots).
 *
 * Prints one JSON line: per efSearch and variant the best-of-rounds query rows per second and
 * the recall@k against `exact-<n>.json` (the exact fp32 top-k of the same query rows).
 *
 * With KIND (f16 | i8) and GRAPH_DIR (an `all.usearch` of that kind over the same first N
 * tokens, e.g. from `--build`), the `hnsw` and `token-index` variants search that graph and the
 * raw variants are left out: the token index still rescores from the fp32 codes.
 *
 * usage: annprof.ts DIR N EF_LIST [ROUNDS] [VARIANTS] [KIND GRAPH_DIR [--build]]
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  HNSW_MARGIN,
  HnswTokenIndex,
  buildHnsw,
  loadHnsw,
  trainCodec,
  type HnswScalarKind,
} from '@bfe/index';
import usearch from 'usearch';
import { recallAt } from './measure.js';
import { loadavg, readF32, readMeta } from './scale.js';

const { Index, MetricKind, ScalarKind } = usearch;
const K = 64;

const [dir, nArg, efArg, roundsArg, variantsArg, kindArg, graphDir, buildFlag] =
  process.argv.slice(2);
if (dir === undefined || nArg === undefined || efArg === undefined) {
  throw new Error('usage: annprof.ts DIR N EF_LIST [ROUNDS] [VARIANTS]');
}
const n = Number(nArg);
const efs = efArg.split(',').map(Number);
const rounds = Number(roundsArg ?? 3);
const meta = readMeta(dir);
const { dim, rows, queries } = meta;
const R = queries * rows;
const q = readF32(join(dir, 'queries.f32'), R * dim);
const want = Int32Array.from(
  JSON.parse(readFileSync(join(dir, `exact-${n}.json`), 'utf8')) as number[],
);
const kind = (kindArg ?? 'f32') as HnswScalarKind;
const graph = join(graphDir ?? join(dir, `hnsw-${n}`), 'all.usearch');
const x = readF32(join(dir, 'vectors.f32'), n * dim);
if (buildFlag === '--build') {
  const t0 = performance.now();
  const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: 64 };
  const built = await buildHnsw(x, n, dim, params, { threads: 1, kind });
  await built.save(graph);
  const buildS = (performance.now() - t0) / 1000;
  process.stderr.write(`built ${kind} ${graph} in ${buildS.toFixed(1)} s (${loadavg()})\n`);
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
const qOf = (i: number): Float32Array => q.subarray(i * rows * dim, (i + 1) * rows * dim);

type Run = () => Promise<Int32Array>;
const keysToTop = (keys: BigUint64Array, fetch: number, into: Int32Array, at: number): void => {
  for (let r = 0; r < rows; r++)
    for (let j = 0; j < K; j++) into[at + r * K + j] = Number(keys[r * fetch + j]);
};

async function variants(ef: number): Promise<Map<string, Run>> {
  const raw = new Index({
    dimensions: dim,
    metric: MetricKind.IP,
    quantization: ScalarKind.F32,
    connectivity: meta.M,
    expansion_add: meta.efConstruction,
    expansion_search: ef,
    multi: false,
  });
  if (kind === 'f32') raw.load(graph);
  const params = { M: meta.M, efConstruction: meta.efConstruction, efSearch: ef };
  const hnsw = await loadHnsw(graph, dim, params, { threads: 1, kind });
  const tokenIndex = await HnswTokenIndex.load(dirname(graph), side, params, {
    threads: 1,
    kind,
  });
  const perQuery =
    (fetch: number): Run =>
    () => {
      const out = new Int32Array(R * K);
      for (let i = 0; i < queries; i++) {
        const res = raw.search(qOf(i), fetch, 1) as { keys: BigUint64Array };
        keysToTop(res.keys, fetch, out, i * rows * K);
      }
      return Promise.resolve(out);
    };
  return new Map<string, Run>([
    [
      'raw-batch',
      () => {
        const res = raw.search(q, K, 1) as { keys: BigUint64Array };
        return Promise.resolve(Int32Array.from(res.keys, Number));
      },
    ],
    ['raw-query', perQuery(K)],
    ['raw-query-k+16', perQuery(K + HNSW_MARGIN)],
    [
      'hnsw',
      () => {
        const out = new Int32Array(R * K);
        const fetch = K + HNSW_MARGIN;
        for (let i = 0; i < queries; i++) {
          const res = hnsw.search(qOf(i), rows, fetch);
          for (let r = 0; r < rows; r++)
            out.set(res.indices.subarray(r * fetch, r * fetch + K), (i * rows + r) * K);
        }
        return Promise.resolve(out);
      },
    ],
    [
      'token-index',
      async () => {
        const out = new Int32Array(R * K);
        for (let i = 0; i < queries; i++) {
          const hits = await tokenIndex.search(qOf(i), rows, K, { memories: cands });
          out.set(hits.tokens, i * rows * K);
        }
        return out;
      },
    ],
  ]);
}

const only =
  variantsArg === undefined || variantsArg === 'all' ? undefined : variantsArg.split(',');
const result: object[] = [];
for (const ef of efs) {
  const runs = await variants(ef);
  const bestS = new Map<string, number>();
  const recall = new Map<string, number>();
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of runs) {
      if (only !== undefined && !only.includes(name)) continue;
      if (kind !== 'f32' && name.startsWith('raw')) continue;
      const t0 = performance.now();
      const got = await run();
      const s = (performance.now() - t0) / 1000;
      bestS.set(name, Math.min(bestS.get(name) ?? Infinity, s));
      recall.set(name, recallAt(got, want, R, K));
    }
  }
  for (const [name, s] of bestS)
    result.push({
      ef,
      variant: kind === 'f32' ? name : `${name}-${kind}`,
      qps: R / s,
      recall: recall.get(name),
      load: loadavg(),
    });
  process.stderr.write(`ef ${ef} done (${loadavg()})\n`);
}
process.stdout.write(
  `${JSON.stringify({ tokens: n, rows: R, k: K, threads: 1, rounds, result })}\n`,
);
