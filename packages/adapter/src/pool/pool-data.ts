// The training pool's data: the queries as the pool takes them, what each worker starts with,
// and their copy into shared memory (each distinct candidate set once).
import type { KernelGraph } from '../kernels/kernel-graph.js';
import type { TokenSegments } from '../loss/loss.js';
import type { TrainKernel } from '../options.js';

/** One query as the pool takes it: unit token states and a candidate set (shared by identity). */
export interface PoolQuery {
  readonly tokens: Float32Array;
  readonly rows: number;
  readonly candidates: TokenSegments & { readonly tokenVectors: Float32Array };
  readonly positives: readonly number[];
}

/** What every worker gets once, at start (typed arrays over shared memory are not copied). */
export interface PoolSetup {
  /** The worker's index, for error messages and the test failpoint. */
  readonly worker: number;
  readonly dim: number;
  readonly rank: number;
  readonly temperature: number;
  /** What computes MaxSim (`TRAIN_KERNELS`). */
  readonly kernel: TrainKernel;
  /** The onnxruntime kernel's graph and session options; undefined for the `js` kernel. */
  readonly graph: KernelGraph | undefined;
  /** Distinct candidate sets: token states `[N × dim]` (shared memory) and offsets `[M + 1]`. */
  readonly sets: readonly {
    readonly tokenVectors: Float32Array;
    readonly memoryOffsets: Int32Array;
  }[];
  /** Every query's token rows, concatenated (shared memory), `[rows × dim]`. */
  readonly queryTokens: Float32Array;
  /** Query `q` owns rows `queryRows[q] .. queryRows[q + 1]` of `queryTokens`. */
  readonly queryRows: Int32Array;
  /** Index into `sets` of query `q`'s candidates. */
  readonly querySet: Int32Array;
  /** Query `q`'s positives are `positives[positiveStart[q] .. positiveStart[q + 1]]`. */
  readonly positiveStart: Int32Array;
  readonly positives: Int32Array;
}

/** What a worker starts with (`workerData`); the rest of its {@link PoolSetup} follows as its first message. */
export type PoolBoot = Pick<
  PoolSetup,
  'worker' | 'dim' | 'rank' | 'temperature' | 'kernel' | 'graph'
>;

/** A worker's first message: its token states and queries (shared memory is not copied). */
export type PoolData = Omit<PoolSetup, keyof PoolBoot>;

/** Copies token states into shared memory, each distinct candidate set (by identity) once. */
export function shareQueries(queries: readonly PoolQuery[], dim: number): PoolData {
  const setIndex = new Map<PoolQuery['candidates'], number>();
  const sets: { tokenVectors: Float32Array; memoryOffsets: Int32Array }[] = [];
  const n = queries.length;
  const queryRows = new Int32Array(n + 1);
  const querySet = new Int32Array(n);
  const positiveStart = new Int32Array(n + 1);
  for (let q = 0; q < n; q++) {
    const { candidates, rows, positives } = queries[q]!;
    let s = setIndex.get(candidates);
    if (s === undefined) {
      s = sets.length;
      setIndex.set(candidates, s);
      sets.push({
        tokenVectors: shared(candidates.tokenVectors),
        memoryOffsets: Int32Array.from(candidates.memoryOffsets),
      });
    }
    querySet[q] = s;
    queryRows[q + 1] = queryRows[q]! + rows;
    positiveStart[q + 1] = positiveStart[q]! + positives.length;
  }
  const queryTokens = new Float32Array(new SharedArrayBuffer(queryRows[n]! * dim * 4));
  const positives = new Int32Array(positiveStart[n]!);
  for (let q = 0; q < n; q++) {
    const query = queries[q]!;
    queryTokens.set(query.tokens.subarray(0, query.rows * dim), queryRows[q]! * dim);
    positives.set(query.positives, positiveStart[q]!);
  }
  return { sets, queryTokens, queryRows, querySet, positiveStart, positives };
}

function shared(values: Float32Array): Float32Array {
  if (values.buffer instanceof SharedArrayBuffer) return values;
  const out = new Float32Array(new SharedArrayBuffer(values.byteLength));
  out.set(values);
  return out;
}
