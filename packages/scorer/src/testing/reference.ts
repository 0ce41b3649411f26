/**
 * The slow, obviously correct float64 reference of METHOD.md §2–3 that the scorer is tested
 * against: every score computed directly from its definition, full sorts, no streaming, no
 * scatter. Not part of the package API.
 */
import { referenceDot as dot, type ReferenceBank } from '@bfe/index/testing';

export type { ReferenceBank };

function zscore(x: number[]): number[] {
  const mean = x.reduce((a, b) => a + b, 0) / x.length;
  const variance = x.reduce((a, b) => a + (b - mean) ** 2, 0) / x.length;
  const sd = Math.max(Math.sqrt(variance), 1e-6);
  return x.map((v) => (v - mean) / sd);
}

export interface ReferenceScores {
  readonly pooled: number[];
  readonly maxsim: number[];
  readonly sparse: number[];
  readonly sparseZeroFloor: number[];
  readonly fused: number[];
  readonly zeroFloorFused: number[];
  readonly noFusion: number[];
  /** Exhaustive MaxSim in place of sparse matching: `α·z(pooled) + (1 − α)·z(maxsim)`. */
  readonly maxsimFused: number[];
  readonly tailFloor: number[];
  /** Per query token, the returned bank token indices (into `memories.tokenVectors` rows). */
  readonly returned: number[][];
}

/** Every score of one query over `candidates` (memory rows), straight from METHOD.md. */
export function referenceScores(
  memories: ReferenceBank,
  queries: ReferenceBank,
  queryRow: number,
  candidates: readonly number[],
  k: number,
  alpha: number,
): ReferenceScores {
  const dim = memories.dim;
  const mo = memories.tokenOffsets;
  const qo = queries.tokenOffsets;
  const owner = new Map<number, number>();
  const bankTokens: number[] = [];
  for (const m of candidates) {
    for (let t = mo[m]!; t < mo[m + 1]!; t++) {
      bankTokens.push(t);
      owner.set(t, m);
    }
  }
  bankTokens.sort((a, b) => a - b);
  const pooled = candidates.map((m) => dot(queries.pooled, queryRow, memories.pooled, m, dim));
  const queryTokens: number[] = [];
  for (let t = qo[queryRow]!; t < qo[queryRow + 1]!; t++) queryTokens.push(t);
  const nq = queryTokens.length;
  const tailFloor: number[] = [];
  const returned: number[][] = [];
  const sparse = candidates.map(() => 0);
  const sparseZeroFloor = candidates.map(() => 0);
  const maxsim = candidates.map(() => 0);
  for (const qt of queryTokens) {
    const scored = bankTokens.map((t) => ({
      t,
      s: dot(queries.tokenVectors, qt, memories.tokenVectors, t, dim),
    }));
    scored.sort((x, y) => (y.s !== x.s ? y.s - x.s : x.t - y.t));
    const r = scored.slice(0, k);
    returned.push(r.map((e) => e.t));
    const floor = Math.max(0, Math.min(...r.map((e) => e.s)));
    tailFloor.push(floor);
    candidates.forEach((m, g) => {
      const hits = r.filter((e) => owner.get(e.t) === m).map((e) => e.s);
      const bestHit = hits.length > 0 ? Math.max(...hits) : -Infinity;
      sparse[g]! += Math.max(floor, bestHit) / nq;
      sparseZeroFloor[g]! += Math.max(0, bestHit) / nq;
      const own = scored.filter((e) => owner.get(e.t) === m).map((e) => e.s);
      maxsim[g]! += (own.length > 0 ? Math.max(...own) : -1) / nq;
    });
  }
  const zp = zscore(pooled);
  const fusedOf = (s: number[], a: number): number[] => {
    const zs = zscore(s);
    return zp.map((p, g) => a * p + (1 - a) * zs[g]!);
  };
  return {
    pooled,
    maxsim,
    sparse,
    sparseZeroFloor,
    fused: fusedOf(sparse, alpha),
    zeroFloorFused: fusedOf(sparseZeroFloor, alpha),
    noFusion: fusedOf(sparse, 0),
    maxsimFused: fusedOf(maxsim, alpha),
    tailFloor,
    returned,
  };
}
