// The clustered index's fast scan alone against this machine's peak (the roofline line of
// `pnpm bench:big-bank --ivf`).
import {
  WasmScanner,
  codeBytes,
  quantizeTables,
  type IvfTokenIndex,
  type SimilarityKernel,
} from '@bfe/index';

/** This machine's peak fp32 rate and read bandwidth, one core. */
export const PEAK_GFLOPS = 78;
export const PEAK_GBS = 15.7;

/**
 * The fast scan alone (the roofline line), each build of the module (relaxed SIMD's swizzle and
 * the plain one): every block of the index scanned once per rep with one query row's tables and
 * a threshold nothing reaches, best of 3 in CPU time.
 */
export function scanKernelLine(
  index: IvfTokenIndex,
  bits: 2 | 4,
  q: Float32Array,
  dim: number,
): string {
  const blocks = Math.ceil(index.data.tokens.length / 16);
  const rates = (['relaxed', 'plain'] as const).map((kind) => {
    const scanner = new WasmScanner(index.data, 0, kind);
    quantizeTables(index.data, q, 0, scanner);
    let best = Infinity;
    for (let rep = 0; rep < 3; rep++) {
      const t0 = process.cpuUsage();
      for (let b = 0; b < blocks; b += 4096) scanner.scan(b, Math.min(blocks, b + 4096), 65_535);
      const c = process.cpuUsage(t0);
      best = Math.min(best, (c.user + c.system) / 1e6);
    }
    return (blocks * 16) / best;
  });
  const [perSecond, plain] = rates as [number, number];
  const gflops = (perSecond * 2 * dim) / 1e9;
  const gbs = (perSecond * codeBytes(dim, bits)) / 1e9;
  return (
    `fast scan alone, ${bits}-bit (every block once, one thread): ${(perSecond / 1e6).toFixed(1)}M tokens/CPU-s, ` +
    `${((1e9 / perSecond) | 0).toString()} ns a token, ${((gflops / PEAK_GFLOPS) * 100).toFixed(0)} % of ${PEAK_GFLOPS} GFLOP/s ` +
    `counted as 2·${dim} flops a token, codes read at ${gbs.toFixed(1)} GB/s (${((gbs / PEAK_GBS) * 100).toFixed(0)} % of ${PEAK_GBS}); ` +
    `the plain build (no relaxed SIMD) ${(plain / 1e6).toFixed(1)}M (×${(perSecond / plain).toFixed(2)})`
  );
}

/**
 * A row's probe order alone: the module's selection from a sampled threshold against its
 * insertion over the whole row (the same clusters, checked), on the centroid scores of the
 * query rows `q` (`[rows × dim]`, scored by `kernel`), for each `n`; calls alternate, best of 5
 * in CPU time.
 */
export async function probeOrderLine(
  index: IvfTokenIndex,
  kernel: SimilarityKernel,
  q: Float32Array,
  dim: number,
  ns: readonly number[],
): Promise<string> {
  const { centroids } = index.data;
  const c = centroids.length / dim;
  const rows = q.length / dim;
  const scores = await kernel.scores(q, rows, centroids, c, dim);
  const lane = new WasmScanner(index.data, 0);
  const parts = [...new Set(ns)].map((n) => {
    const best = { sampled: Infinity, whole: Infinity };
    for (let rep = 0; rep < 5; rep++) {
      for (const way of rep % 2 === 0
        ? (['sampled', 'whole'] as const)
        : (['whole', 'sampled'] as const)) {
        const t0 = process.cpuUsage();
        for (let r = 0; r < rows; r++) lane.probeTop(scores, r * c, c, n, way === 'sampled');
        const t = process.cpuUsage(t0);
        best[way] = Math.min(best[way], (t.user + t.system) / rows);
      }
    }
    for (let r = 0; r < rows; r++) {
      const a = Array.from(lane.probeTop(scores, r * c, c, n, true));
      const b = Array.from(lane.probeTop(scores, r * c, c, n, false));
      if (a.join() !== b.join()) throw new Error(`probe order: the two selections differ (n ${n})`);
    }
    return (
      `n ${n}: ${best.sampled.toFixed(1)} µs a row sampled, ${best.whole.toFixed(1)} whole-row ` +
      `(×${(best.whole / best.sampled).toFixed(2)})`
    );
  });
  return `probe order alone (${rows} query rows' scores over ${c} centroids, one thread): ${parts.join('; ')}`;
}
