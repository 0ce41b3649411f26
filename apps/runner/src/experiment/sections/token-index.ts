import { z } from 'zod';
import { seedSchema } from './common.js';

/**
 * The token index the scorer proposes from (METHOD.md §8, "Compressed and approximate token
 * search"): `exact`, `hnsw` (usearch) or `ivf` (clustered residual codes, the WARP design) over a
 * codec's stored codes; proposals are rescored in
 * float64 from the decoded codes. Left out: today's exact float32 search, and every key and
 * file of the run stays as it was.
 */
export const indexSectionSchema = z
  .strictObject({
    backend: z.enum(['exact', 'hnsw', 'ivf', 'milvus']).default('exact'),
    /**
     * milvus: the server, a `milvus://HOST:PORT` or `https://HOST:PORT` URL whose query names
     * the index and its parameters (`?index=HNSW&M=16&ef=128`, `?index=IVF_SQ8&nprobe=32`;
     * FLAT, the default, gives the exact backend's results); the token from `BFE_MILVUS_TOKEN`.
     */
    milvus: z
      .string()
      .regex(/^(milvus|https?):\/\/./, 'a milvus:// or https:// URL')
      .optional(),
    codec: z.enum(['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4']).default('fp32'),
    /** HNSW connectivity (usearch `connectivity`). */
    M: z.int().positive().default(16),
    efConstruction: z.int().positive().default(128),
    efSearch: z.int().positive().default(128),
    /**
     * The HNSW graph's vector kind: `f32`, `f16` or `i8` (usearch's int8 cast). The graph only
     * proposes; every proposal is rescored in float64 from the stored codes. Left out: the
     * codec's own kind (fp32 → f32, fp16 → f16, the others → i8), so a section without it
     * keeps its meaning and its cache key.
     */
    graph: z.enum(['f32', 'f16', 'i8']).optional(),
    /**
     * Proposals per query token and graph: `ceil(overFetch · k) + 16`, all rescored exactly.
     * Left out: 1 (`k + 16`). A cheaper graph kind buys back what its coarser ranking misses.
     */
    overFetch: z.number().min(1).max(64).optional(),
    /**
     * Proposals beyond `ceil(overFetch · k)` per query token and graph (an integer ≥ 1).
     * Left out: 16. Smaller: usearch searches narrower (its width is at least the count asked
     * for), a cheaper, lower-recall operating point — but a tie at the last proposal (exact
     * duplicate tokens, coarse codes) widens that token's search to every candidate, which a
     * small margin makes common on real banks (BENCHMARKS.md, issue 13).
     */
    margin: z.int().min(1).max(1024).optional(),
    /**
     * Threads each HNSW graph is built with. Left out: 1, the reproducible build (the same
     * inputs, the same index bytes); more is faster, not reproducible, and keyed and reported
     * `deterministic: false`.
     */
    buildThreads: z.int().min(1).max(1024).optional(),
    /**
     * ivf: k-means centroids. Left out: WARP's rule, `2^⌊log2(16·√tokens)⌋` (at most the tokens).
     */
    centroids: z.int().positive().optional(),
    /**
     * ivf: clusters probed per query token at least (more when they hold too few candidates).
     * Left out: 16 (optional, so sections of other backends parse as before).
     */
    nprobe: z.int().positive().optional(),
    /**
     * ivf: adaptive probing — past `nprobe`, a query token probes on while the next centroid
     * scores within `probeSlack` of its running top's floor, up to `maxProbe` clusters (left out:
     * 64). Left out: off, `nprobe` clusters a token. `pnpm bench:big-bank --ivf-probe-slack`
     * measures it (BENCHMARKS.md, "Clustered residual codes").
     */
    probeSlack: z.number().min(0).max(10).optional(),
    maxProbe: z.int().positive().optional(),
    /** ivf: residual bits per dimension, 2 or 4. Left out: 4. */
    residualBits: z.union([z.literal(2), z.literal(4)]).optional(),
    /**
     * ivf: threads one search's scan runs on (the calling thread and `searchThreads − 1` workers
     * sharing the codes). Left out: 2 on a machine of 2 cores or more, else 1. The results are
     * the same whatever the count, so it is in no cache key.
     */
    searchThreads: z.int().min(1).max(64).optional(),
    /**
     * ivf: what a query token's missing similarities are floored at — `tail` (left out) the
     * k-th returned similarity (METHOD.md §2), `warp` WARP's estimate from the centroid scores
     * (the score of the centroid at which the probe order's clusters hold t′ = ⌊√(8·tokens) /
     * 1000⌋ · 1000 candidate tokens, at least 1000, within the best 128), clipped at 0.
     */
    floor: z.enum(['tail', 'warp']).optional(),
    /**
     * ivf: the centroid product's arithmetic — `fp32` (left out) float32 products, `int8` the
     * centroids at 7 bits and the query rows at 8 in onnxruntime's integer GEMM: the same recall
     * at 2e6 tokens (±0.001) in under half the product's time (BENCHMARKS.md); hits still rescored
     * exactly.
     */
    centroidProduct: z.enum(['fp32', 'int8']).optional(),
    /** The `rp128+sq4` projection seed (METHOD.md §6, 42). */
    seed: seedSchema.default(42),
  })
  .check((ctx) => {
    const c = ctx.value;
    if (c.backend === 'milvus' && c.milvus === undefined)
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['milvus'],
        message: 'backend milvus needs milvus: <URL>',
      });
    if (c.floor === 'warp' && c.backend !== 'ivf')
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['floor'],
        message: "floor 'warp' is the ivf backend's estimate (backend: ivf)",
      });
    for (const key of ['probeSlack', 'maxProbe'] as const) {
      if (c[key] !== undefined && c.backend !== 'ivf')
        ctx.issues.push({
          code: 'custom',
          input: c,
          path: [key],
          message: `${key} is the ivf backend’s (backend: ivf)`,
        });
    }
    if (c.maxProbe !== undefined && c.probeSlack === undefined)
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['maxProbe'],
        message: 'maxProbe bounds adaptive probing: set probeSlack too',
      });
    if (c.maxProbe !== undefined && c.maxProbe < (c.nprobe ?? 16))
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['maxProbe'],
        message: `maxProbe must be at least nprobe (${c.nprobe ?? 16})`,
      });
    if (c.centroidProduct !== undefined && c.backend !== 'ivf')
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['centroidProduct'],
        message: 'centroidProduct is the ivf backend’s (backend: ivf)',
      });
    if (c.backend === 'milvus' && c.codec !== 'fp32')
      ctx.issues.push({
        code: 'custom',
        input: c,
        path: ['codec'],
        message: 'backend milvus stores fp32 tokens',
      });
  })
  .optional();
