/**
 * AdamW with decoupled weight decay and a global gradient-norm clip (METHOD.md §4: lr 1e-4,
 * weight decay 1e-4, clip 1.0), on float64 parameters. Float64 master weights matter: a
 * decay step multiplies a weight by `1 − lr·wd = 1 − 1e-8`, which float32 (ε ≈ 6e-8) would
 * round away.
 */

/** AdamW hyperparameters. */
export interface AdamWOptions {
  readonly learningRate: number;
  readonly beta1: number;
  readonly beta2: number;
  readonly epsilon: number;
  readonly weightDecay: number;
}

/** METHOD.md §4's optimiser settings, with the usual Adam betas and epsilon. */
export const DEFAULT_ADAMW: AdamWOptions = {
  learningRate: 1e-4,
  beta1: 0.9,
  beta2: 0.999,
  epsilon: 1e-8,
  weightDecay: 1e-4,
};

/**
 * AdamW (Loshchilov & Hutter), in PyTorch's order: for step `t` (from 1), each parameter
 * `p` with gradient `g`:
 *
 *   `p ← p − lr·wd·p` (decoupled decay, from the pre-step value),
 *   `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
 *   `p ← p − lr · (m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε)`.
 *
 * Updates the parameter arrays in place; decay applies to every parameter array given.
 * @example
 * const opt = new AdamW([params.a, params.b], DEFAULT_ADAMW);
 * opt.step([grads.a, grads.b]);
 */
export class AdamW {
  readonly options: AdamWOptions;
  readonly #params: readonly Float64Array[];
  readonly #m: Float64Array[];
  readonly #v: Float64Array[];
  #t = 0;

  constructor(params: readonly Float64Array[], options: AdamWOptions = DEFAULT_ADAMW) {
    this.options = options;
    this.#params = params;
    this.#m = params.map((p) => new Float64Array(p.length));
    this.#v = params.map((p) => new Float64Array(p.length));
  }

  /** Steps taken so far. */
  get steps(): number {
    return this.#t;
  }

  /** One update with `grads`, aligned with the parameter arrays. */
  step(grads: readonly Float64Array[]): void {
    if (grads.length !== this.#params.length) {
      throw new Error(`AdamW.step: ${grads.length} gradients for ${this.#params.length} params`);
    }
    const { learningRate: lr, beta1, beta2, epsilon, weightDecay } = this.options;
    this.#t += 1;
    const t = this.#t;
    const correction1 = 1 - beta1 ** t;
    const correction2 = 1 - beta2 ** t;
    const decay = lr * weightDecay;
    for (let i = 0; i < grads.length; i++) {
      const p = this.#params[i]!;
      const g = grads[i]!;
      const m = this.#m[i]!;
      const v = this.#v[i]!;
      if (g.length !== p.length) throw new Error(`AdamW.step: gradient ${i} has the wrong length`);
      const n = p.length;
      for (let k = 0; k < n; k++) {
        const gk = g[k]!;
        const mk = beta1 * m[k]! + (1 - beta1) * gk;
        const vk = beta2 * v[k]! + (1 - beta2) * gk * gk;
        m[k] = mk;
        v[k] = vk;
        const pk = p[k]!;
        p[k] =
          pk - decay * pk - (lr * (mk / correction1)) / (Math.sqrt(vk / correction2) + epsilon);
      }
    }
  }
}

/**
 * Global gradient-norm clipping over all arrays together (PyTorch `clip_grad_norm_`): when the
 * joint L2 norm exceeds `maxNorm`, every gradient is scaled in place by
 * `maxNorm / (norm + 1e-6)`. Returns the norm before clipping.
 * @example clipGradNorm([Float64Array.of(3), Float64Array.of(4)], 1); // 5; grads now ≈ 0.6, 0.8
 */
export function clipGradNorm(grads: readonly Float64Array[], maxNorm: number): number {
  let ss = 0;
  for (const g of grads) for (let k = 0; k < g.length; k++) ss += g[k]! * g[k]!;
  const norm = Math.sqrt(ss);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of grads) for (let k = 0; k < g.length; k++) g[k]! *= coef;
  return norm;
}
