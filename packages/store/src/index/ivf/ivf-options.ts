import { z } from 'zod';
import { IVF_DRIFT_THRESHOLD, probeLimits } from '@bfe/index';

/**
 * The `ivf` section of the store's index options (`large: 'ivf'`): how each large bank's
 * clustered residual index (`IvfTokenIndex`) is trained, searched and kept. Each default is
 * predeclared with its reason.
 */
export const storeIvfOptionsSchema = z
  .strictObject({
    /**
     * k-means centroids. Left out: `ivfCentroids(tokens)`, `4·√N` rounded to a power of two,
     * where the centroid product and the scan of `nprobe` clusters cost alike at nprobe 16.
     */
    centroids: z.number().int().positive().optional(),
    /**
     * Clusters probed per query token at least: 16, the index's experiment default (recall@64
     * 0.92 over 2e6 real tokens at 4 bits; 8 gave 0.88, 32 gave 0.94).
     */
    nprobe: z.number().int().positive().default(16),
    /**
     * Adaptive probing (`IvfSearchOptions.probeSlack`, `maxProbe`): past `nprobe`, on while the
     * next centroid is within this of the token's running floor. Left out: off.
     */
    probeSlack: z.number().min(0).max(10).optional(),
    maxProbe: z.number().int().positive().optional(),
    /**
     * The centroid product's arithmetic: left out, float32; `int8`, onnxruntime's integer GEMM
     * (the same recall at 2e6 tokens in under half the product's time;
     * `IvfSearchOptions.centroidProduct`).
     */
    centroidProduct: z.enum(['fp32', 'int8']).optional(),
    /** Residual bits per dimension: 4 (at 2 bits recall is bound by the proposals, 0.84 vs 0.94). */
    residualBits: z.union([z.literal(2), z.literal(4)]).default(4),
    /** Proposals per query token `ceil(overFetch·k) + margin`: 1 and 16, as HNSW's `k + 16`. */
    overFetch: z.number().min(1).default(1),
    margin: z.number().int().positive().default(16),
    /**
     * Scan threads per search: 1 — a store serves searches beside its writes and other requests
     * (as `hnsw.threads`); more lowers one search's latency, not the machine's work.
     */
    threads: z.number().int().positive().max(64).default(1),
    /**
     * A compaction re-clusters past this drift (appended tokens' mean squared residual over the
     * training tokens'): the index's 1.25 — same-distribution appends stay within a few per cent
     * of 1, a new topic's measured 4.48.
     */
    driftThreshold: z.number().positive().default(IVF_DRIFT_THRESHOLD),
    /**
     * A flush compacts an index once its tail and tombstoned tokens pass this share of its live
     * ones (0.25): tombstoned tokens are scanned and thrown away, so this caps that waste at a
     * quarter of a probe, and the drift is checked at least as often.
     */
    compactShare: z.number().nonnegative().default(0.25),
    /**
     * A flush trains an index again from the live rows (in the background; the old one serves)
     * once its dead rows — whose float32 states it still holds — pass this share of its live
     * tokens (0.5, as the graphs' `compactRemoved`): memory stays within 1.5× the live bank's.
     */
    rebuildDead: z.number().nonnegative().default(0.5),
  })
  .check((ctx) => {
    // The index's own rule (a maxProbe needs a slack and at least nprobe), at the open.
    try {
      probeLimits(ctx.value);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      ctx.issues.push({ code: 'custom', input: ctx.value.maxProbe, path: ['maxProbe'], message });
    }
  });
export type StoreIvfOptions = z.input<typeof storeIvfOptionsSchema>;
export type ResolvedStoreIvfOptions = z.output<typeof storeIvfOptionsSchema>;
