import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Prng } from '@bfe/adapter';
import { auroc, aurocInterval, bestF1Threshold, fitLogistic, flagBelow } from './logistic.js';

/** A seeded uniform generator (mulberry32, the adapter's). */
function uniform(seed: number): () => number {
  const prng = new Prng(seed);
  return () => prng.next();
}

/** `n` rows of two features (one offset and scaled, as raw scores are) and Bernoulli labels. */
function sample(n: number, beta: [number, number, number], seed: number) {
  const u = uniform(seed);
  const x = new Float64Array(n * 2);
  const y = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    x[i * 2] = u() * 2 - 1;
    x[i * 2 + 1] = 0.3 + 0.1 * u();
    const z = beta[0] + beta[1] * x[i * 2]! + beta[2] * x[i * 2 + 1]!;
    y[i] = u() < 1 / (1 + Math.exp(-z)) ? 1 : 0;
  }
  return { x, y };
}

describe('fitLogistic', () => {
  it('recovers the coefficients that generated the labels', () => {
    const { x, y } = sample(40_000, [-4, 2, 8], 1);
    const fit = fitLogistic(x, 2, y, { l2: 0 });
    expect(fit.weights[0]).toBeCloseTo(2, 0);
    expect(Math.abs(fit.weights[1]! - 8)).toBeLessThan(2);
    expect(Math.abs(fit.intercept + 4)).toBeLessThan(0.7);
  });

  it('without a penalty, sets the likelihood gradient to zero (the score equations)', () => {
    const { x, y } = sample(2_000, [0.5, -1, 3], 2);
    const fit = fitLogistic(x, 2, y, { l2: 0 });
    const grad = [0, 0, 0];
    for (let i = 0; i < y.length; i++) {
      const z = fit.intercept + fit.weights[0]! * x[i * 2]! + fit.weights[1]! * x[i * 2 + 1]!;
      const r = y[i]! - 1 / (1 + Math.exp(-z));
      grad[0]! += r;
      grad[1]! += r * x[i * 2]!;
      grad[2]! += r * x[i * 2 + 1]!;
    }
    for (const g of grad) expect(Math.abs(g)).toBeLessThan(1e-6);
  });

  it('shrinks the weights as the penalty grows', () => {
    const { x, y } = sample(2_000, [0, 3, 0], 3);
    const loose = fitLogistic(x, 2, y, { l2: 0 });
    const tight = fitLogistic(x, 2, y, { l2: 1_000 });
    expect(Math.abs(tight.weights[0]!)).toBeLessThan(Math.abs(loose.weights[0]!));
  });

  it('refuses one class and mismatched shapes', () => {
    expect(() => fitLogistic(new Float64Array(4), 2, new Uint8Array(2))).toThrow(/both classes/);
    expect(() => fitLogistic(new Float64Array(3), 2, new Uint8Array([0, 1]))).toThrow(/values/);
  });
});

describe('auroc', () => {
  it('is the share of (positive, negative) pairs ordered right, ties one half', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.boolean()), { minLength: 2 }),
        (items) => {
          const labels = items.map(([, l]) => (l ? 1 : 0));
          fc.pre(labels.includes(1) && labels.includes(0));
          const scores = items.map(([s]) => s);
          let wins = 0;
          let pairs = 0;
          for (let i = 0; i < items.length; i++) {
            for (let j = 0; j < items.length; j++) {
              if (labels[i] !== 1 || labels[j] !== 0) continue;
              pairs++;
              wins += scores[i]! > scores[j]! ? 1 : scores[i] === scores[j] ? 0.5 : 0;
            }
          }
          const a = auroc(scores, labels);
          expect(a).toBeCloseTo(wins / pairs, 12);
          expect(a).toBeGreaterThanOrEqual(0);
          expect(a).toBeLessThanOrEqual(1);
        },
      ),
    );
  });

  it('refuses a single class', () => {
    expect(() => auroc([1, 2], [1, 1])).toThrow(/both classes/);
  });
});

describe('bestF1Threshold', () => {
  it('finds the best F1 of any threshold, at the lowest threshold reaching it', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 20 }), fc.boolean()), { minLength: 1 }),
        (items) => {
          const scores = items.map(([s]) => s / 20);
          const labels = items.map(([, l]) => (l ? 1 : 0));
          const best = bestF1Threshold(scores, labels);
          for (let t = -0.025; t <= 1.1; t += 0.025) {
            expect(flagBelow(scores, labels, t).f1).toBeLessThanOrEqual(best.f1 + 1e-12);
          }
          expect(flagBelow(scores, labels, best.threshold)).toEqual(best);
        },
      ),
    );
  });

  it('counts precision and recall of flagging the scores below the threshold', () => {
    const c = flagBelow([0.1, 0.2, 0.6, 0.9], [1, 0, 1, 0], 0.5);
    expect(c).toMatchObject({
      flagged: 2,
      truePositives: 1,
      positives: 2,
      precision: 0.5,
      recall: 0.5,
    });
  });
});

describe('aurocInterval', () => {
  it('brackets the AUROC, is seeded, and is a point for perfectly separated classes', () => {
    const scores = [0.9, 0.8, 0.3, 0.7, 0.2, 0.1, 0.6, 0.4];
    const labels = [1, 1, 1, 0, 0, 0, 0, 0];
    const [lo, hi] = aurocInterval(scores, labels);
    expect(lo).toBeLessThanOrEqual(auroc(scores, labels));
    expect(hi).toBeGreaterThanOrEqual(auroc(scores, labels));
    expect(lo).toBeLessThan(hi);
    expect(aurocInterval(scores, labels)).toEqual([lo, hi]);
    expect(aurocInterval([3, 2, 1], [1, 0, 0])).toEqual([1, 1]);
  });
});
