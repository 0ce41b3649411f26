/**
 * The statistics of `bfe calibrate`: an L2-regularised logistic regression fitted by Newton's
 * method (IRLS), the area under the ROC curve, and the threshold of best F1.
 */
import { Prng } from '@bfe/adapter';

/** A fitted logistic regression: `P(y = 1 | x) = σ(intercept + weights·x)`. */
export interface LogisticFit {
  readonly intercept: number;
  readonly weights: number[];
  readonly iterations: number;
}

/**
 * Fits `P(y = 1 | x) = σ(b + w·x)` by maximising the log-likelihood minus `l2/2·‖w‖²` (the
 * intercept is not penalised), with Newton steps until the largest step is under `tol`.
 * Features are standardised inside the fit (so `l2` means the same whatever their scale) and
 * the coefficients returned on the original scale.
 *
 * @param x row-major features `[n × d]`.
 * @param y `[n]` labels, 0 or 1.
 * @throws {Error} for mismatched shapes, one class only, or no convergence.
 * @example
 * const fit = fitLogistic(new Float64Array([0.1, 0.9, 0.2, 0.8]), 1, new Uint8Array([0, 1, 0, 1]), { l2: 1 });
 * fit.weights.length; // 1
 */
export function fitLogistic(
  x: Float64Array,
  d: number,
  y: Uint8Array,
  {
    l2 = 1e-3,
    tol = 1e-10,
    maxIterations = 100,
  }: { l2?: number; tol?: number; maxIterations?: number } = {},
): LogisticFit {
  const n = y.length;
  if (x.length !== n * d) throw new Error(`fitLogistic: x has ${x.length} values, not ${n}×${d}`);
  let positives = 0;
  for (let i = 0; i < n; i++) positives += y[i]!;
  if (positives === 0 || positives === n) throw new Error('fitLogistic: needs both classes');
  const mean = new Float64Array(d);
  const scale = new Float64Array(d);
  for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) mean[j]! += x[i * d + j]! / n;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < d; j++) scale[j]! += (x[i * d + j]! - mean[j]!) ** 2 / n;
  }
  for (let j = 0; j < d; j++) scale[j] = Math.sqrt(scale[j]!) || 1;
  const p = d + 1; // coefficient 0 is the intercept
  const beta = new Float64Array(p);
  const row = new Float64Array(p);
  row[0] = 1;
  for (let it = 1; it <= maxIterations; it++) {
    const grad = new Float64Array(p);
    const hess = new Float64Array(p * p);
    for (let i = 0; i < n; i++) {
      let z = beta[0]!;
      for (let j = 0; j < d; j++) {
        row[j + 1] = (x[i * d + j]! - mean[j]!) / scale[j]!;
        z += beta[j + 1]! * row[j + 1]!;
      }
      const mu = 1 / (1 + Math.exp(-z));
      const w = mu * (1 - mu);
      const r = y[i]! - mu;
      for (let a = 0; a < p; a++) {
        grad[a]! += r * row[a]!;
        for (let b = 0; b < p; b++) hess[a * p + b]! += w * row[a]! * row[b]!;
      }
    }
    for (let a = 1; a < p; a++) {
      grad[a]! -= l2 * beta[a]!;
      hess[a * p + a]! += l2;
    }
    const step = solve(hess, grad, p);
    let largest = 0;
    for (let a = 0; a < p; a++) {
      beta[a]! += step[a]!;
      largest = Math.max(largest, Math.abs(step[a]!));
    }
    if (largest < tol) {
      const weights = Array.from({ length: d }, (_, j) => beta[j + 1]! / scale[j]!);
      let intercept = beta[0]!;
      for (let j = 0; j < d; j++) intercept -= weights[j]! * mean[j]!;
      return { intercept, weights, iterations: it };
    }
  }
  throw new Error(`fitLogistic: no convergence in ${maxIterations} Newton steps`);
}

/** Solves the symmetric positive definite `a·s = g` (`[p × p]`) by Gaussian elimination. */
function solve(a: Float64Array, g: Float64Array, p: number): Float64Array {
  const m = Float64Array.from(a);
  const s = Float64Array.from(g);
  for (let c = 0; c < p; c++) {
    let pivot = c;
    for (let r = c + 1; r < p; r++)
      if (Math.abs(m[r * p + c]!) > Math.abs(m[pivot * p + c]!)) pivot = r;
    if (pivot !== c) {
      for (let k = 0; k < p; k++)
        [m[c * p + k], m[pivot * p + k]] = [m[pivot * p + k]!, m[c * p + k]!];
      [s[c], s[pivot]] = [s[pivot]!, s[c]!];
    }
    const diag = m[c * p + c]!;
    if (diag === 0) throw new Error('fitLogistic: singular Hessian');
    for (let r = c + 1; r < p; r++) {
      const f = m[r * p + c]! / diag;
      for (let k = c; k < p; k++) m[r * p + k]! -= f * m[c * p + k]!;
      s[r]! -= f * s[c]!;
    }
  }
  for (let c = p - 1; c >= 0; c--) {
    let v = s[c]!;
    for (let k = c + 1; k < p; k++) v -= m[c * p + k]! * s[k]!;
    s[c] = v / m[c * p + c]!;
  }
  return s;
}

/**
 * The area under the ROC curve of `scores` for `labels` (1 = positive): the probability that a
 * random positive scores above a random negative, ties counting one half (Mann–Whitney U).
 * @throws {Error} when either class is empty.
 * @example
 * auroc([0.9, 0.4, 0.4, 0.1], [1, 1, 0, 0]); // 0.875
 */
export function auroc(scores: readonly number[], labels: readonly number[]): number {
  const order = scores.map((_, i) => i).sort((a, b) => scores[a]! - scores[b]!);
  let positives = 0;
  let rankSum = 0;
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && scores[order[j + 1]!] === scores[order[i]!]) j++;
    const midRank = (i + j) / 2 + 1; // average 1-based rank of the tied run
    for (let t = i; t <= j; t++) {
      if (labels[order[t]!] === 1) {
        positives++;
        rankSum += midRank;
      }
    }
    i = j + 1;
  }
  const negatives = order.length - positives;
  if (positives === 0 || negatives === 0) throw new Error('auroc: needs both classes');
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}

/** Precision, recall and F1 of flagging the items whose score is below `threshold`. */
export interface FlagCounts {
  readonly threshold: number;
  readonly flagged: number;
  readonly truePositives: number;
  readonly positives: number;
  readonly precision: number;
  readonly recall: number;
  readonly f1: number;
}

/**
 * Flags every item with `scores[i] < threshold` and counts it against `labels` (1 = should be
 * flagged): here, a query whose best relevance is under `minScore` gets no result, which is
 * right for an abstention question.
 * @example
 * flagBelow([0.1, 0.8], [1, 0], 0.5); // { precision: 1, recall: 1, f1: 1, … }
 */
export function flagBelow(
  scores: readonly number[],
  labels: readonly number[],
  threshold: number,
): FlagCounts {
  let flagged = 0;
  let truePositives = 0;
  let positives = 0;
  for (let i = 0; i < scores.length; i++) {
    const flag = scores[i]! < threshold;
    if (flag) flagged++;
    if (labels[i] === 1) {
      positives++;
      if (flag) truePositives++;
    }
  }
  const precision = flagged === 0 ? 0 : truePositives / flagged;
  const recall = positives === 0 ? 0 : truePositives / positives;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  return { threshold, flagged, truePositives, positives, precision, recall, f1 };
}

/**
 * The threshold of best F1 for {@link flagBelow}: candidates are the midpoints between
 * consecutive distinct scores (and just above the largest); ties in F1 go to the lower
 * threshold (fewer queries emptied).
 */
export function bestF1Threshold(scores: readonly number[], labels: readonly number[]): FlagCounts {
  const sorted = [...new Set(scores)].sort((a, b) => a - b);
  const candidates = sorted.map((s, i) =>
    i + 1 < sorted.length ? (s + sorted[i + 1]!) / 2 : s + 1e-9,
  );
  let best: FlagCounts | undefined;
  for (const t of candidates) {
    const c = flagBelow(scores, labels, t);
    if (best === undefined || c.f1 > best.f1) best = c;
  }
  if (best === undefined) throw new Error('bestF1Threshold: no scores');
  return best;
}

/**
 * A 95 % percentile interval of {@link auroc} by a seeded bootstrap stratified by class: each
 * resample draws the positives from the positives and the negatives from the negatives, with
 * replacement, so every resample has both classes.
 * @example
 * aurocInterval(scores, labels); // [0.52, 0.81]
 */
export function aurocInterval(
  scores: readonly number[],
  labels: readonly number[],
  { resamples = 2000, seed = 42 }: { resamples?: number; seed?: number } = {},
): [number, number] {
  const pos = scores.filter((_, i) => labels[i] === 1);
  const neg = scores.filter((_, i) => labels[i] !== 1);
  const prng = new Prng(seed);
  const random = (): number => prng.next();
  const draw = (from: readonly number[]): number[] =>
    from.map(() => from[Math.floor(random() * from.length)]!);
  const values: number[] = [];
  for (let r = 0; r < resamples; r++) {
    const p = draw(pos);
    const n = draw(neg);
    values.push(auroc([...p, ...n], [...p.map(() => 1), ...n.map(() => 0)]));
  }
  values.sort((a, b) => a - b);
  const at = (q: number): number => values[Math.min(resamples - 1, Math.floor(q * resamples))]!;
  return [at(0.025), at(0.975)];
}
