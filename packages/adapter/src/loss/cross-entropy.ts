/**
 * The training objective's cross-entropy (METHOD.md §4): the multi-positive softmax loss over
 * one query's candidate scores, its two log-sum-exps and its gradient.
 */

/**
 * Multi-positive cross-entropy over one query's candidates,
 * `−log(Σ_{m∈P} e^{s_m/τ} / Σ_{m∈C} e^{s_m/τ})`, by two log-sum-exps (stable for any score
 * range). Writes `∂loss/∂s_m = (softmax_C(s/τ)_m − [m∈P] softmax_P(s/τ)_m) / τ` into
 * `gradScores` when given. `positives` index into `scores`, non-empty, without repeats.
 * @example
 * multiPositiveCrossEntropy(Float64Array.of(0.9, 0.1), [0], 0.07); // ≈ 1.1e-5
 */
export function multiPositiveCrossEntropy(
  scores: ArrayLike<number>,
  positives: readonly number[],
  temperature: number,
  gradScores?: Float64Array,
): number {
  const n = scores.length;
  const invTau = 1 / temperature;
  const { lseAll, lsePos } = logSumExps(scores, positives, temperature);
  if (gradScores !== undefined) {
    if (gradScores.length < n) throw new Error(`multiPositiveCrossEntropy: gradScores < ${n}`);
    for (let m = 0; m < n; m++) gradScores[m] = Math.exp(scores[m]! * invTau - lseAll) * invTau;
    for (const m of positives) {
      gradScores[m]! -= Math.exp(scores[m]! * invTau - lsePos) * invTau;
    }
  }
  return lseAll - lsePos;
}

/**
 * The two log-sum-exps of {@link multiPositiveCrossEntropy} (`loss = lseAll − lsePos`), over
 * all candidates and over the positives of `s/τ`, computed as it computes them.
 */
export function logSumExps(
  scores: ArrayLike<number>,
  positives: readonly number[],
  temperature: number,
): { readonly lseAll: number; readonly lsePos: number } {
  const n = scores.length;
  if (positives.length === 0) throw new Error('multiPositiveCrossEntropy: no positive');
  const invTau = 1 / temperature;
  let maxAll = -Infinity;
  for (let m = 0; m < n; m++) maxAll = Math.max(maxAll, scores[m]! * invTau);
  let maxPos = -Infinity;
  for (const m of positives) {
    if (!(m >= 0 && m < n)) throw new Error(`multiPositiveCrossEntropy: positive ${m} ∉ [0, ${n})`);
    maxPos = Math.max(maxPos, scores[m]! * invTau);
  }
  let sumAll = 0;
  for (let m = 0; m < n; m++) sumAll += Math.exp(scores[m]! * invTau - maxAll);
  let sumPos = 0;
  for (const m of positives) sumPos += Math.exp(scores[m]! * invTau - maxPos);
  return { lseAll: maxAll + Math.log(sumAll), lsePos: maxPos + Math.log(sumPos) };
}
