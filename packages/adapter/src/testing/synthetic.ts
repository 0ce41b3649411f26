/**
 * A seeded synthetic retrieval problem for tests and the benchmark: random unit memory tokens;
 * each query token is a token of one of its positive memories plus noise plus a fixed
 * "distortion" direction shared by every query. Removing that direction is a rank-1 change,
 * which the adapter can learn. Not part of the package API.
 */
import { Prng } from '../prng.js';
import type { CandidateSet, TrainingQuery } from '../train-input.js';
import { unitRows } from './reference.js';

export interface SyntheticOptions {
  readonly dim: number;
  /** Number of queries. */
  readonly queries: number;
  /** Query rows per query. */
  readonly queryTokens: number;
  /** Candidate memories per bank. */
  readonly memories: number;
  /** Tokens per memory (every fifth memory has half as many, so segments differ). */
  readonly memoryTokens: number;
  /** Queries sharing one bank (LoCoMo-like); 1 = a bank per query (LongMemEval-like). */
  readonly queriesPerBank: number;
  /** Relevant memories per query. */
  readonly positives: number;
  /** Weight of the shared distortion direction in each query token. */
  readonly distortion: number;
  /** Weight of per-token Gaussian noise (the direction is drawn at unit scale per entry/√d). */
  readonly noise: number;
  readonly seed: number;
  /** Prefix of query and memory ids (keeps splits disjoint). */
  readonly prefix: string;
}

/** Queries with their candidate banks. */
export function syntheticQueries(o: SyntheticOptions): TrainingQuery[] {
  const { dim } = o;
  const prng = new Prng(o.seed);
  // the distortion direction depends on dim only, so that every split shares it
  const direction = unitRows(1, dim, new Prng(1_000_003 + dim));
  const out: TrainingQuery[] = [];
  let bank: CandidateSet | undefined;
  for (let q = 0; q < o.queries; q++) {
    if (q % o.queriesPerBank === 0) bank = syntheticBank(o, Math.floor(q / o.queriesPerBank), prng);
    const candidates = bank as CandidateSet;
    const positives: number[] = [];
    while (positives.length < o.positives) {
      const m = prng.nextInt(o.memories);
      if (
        !positives.includes(m) &&
        candidates.memoryOffsets[m + 1]! > candidates.memoryOffsets[m]!
      ) {
        positives.push(m);
      }
    }
    const tokens = new Float32Array(o.queryTokens * dim);
    const h = new Float64Array(dim);
    for (let i = 0; i < o.queryTokens; i++) {
      const m = positives[i % positives.length]!;
      const start = candidates.memoryOffsets[m]!;
      const t = start + prng.nextInt(candidates.memoryOffsets[m + 1]! - start);
      let ss = 0;
      for (let k = 0; k < dim; k++) {
        const x =
          candidates.tokenVectors[t * dim + k]! +
          (o.noise * prng.normal()) / Math.sqrt(dim) +
          o.distortion * direction[k]!;
        h[k] = x;
        ss += x * x;
      }
      const inv = 1 / Math.sqrt(ss);
      for (let k = 0; k < dim; k++) tokens[i * dim + k] = h[k]! * inv;
    }
    out.push({ queryId: `${o.prefix}q${q}`, tokens, candidates, positives });
  }
  return out;
}

function syntheticBank(o: SyntheticOptions, index: number, prng: Prng): CandidateSet {
  const memoryOffsets = new Int32Array(o.memories + 1);
  for (let m = 0; m < o.memories; m++) {
    const n = m % 5 === 4 ? Math.max(1, Math.floor(o.memoryTokens / 2)) : o.memoryTokens;
    memoryOffsets[m + 1] = memoryOffsets[m]! + n;
  }
  const tokenVectors = new Float32Array(unitRows(memoryOffsets[o.memories]!, o.dim, prng));
  const memoryIds = Array.from({ length: o.memories }, (_, m) => `${o.prefix}b${index}:m${m}`);
  return { memoryIds, tokenVectors, memoryOffsets };
}
