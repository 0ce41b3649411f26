import { describe, expect, it } from 'vitest';
import { AdamW, DEFAULT_ADAMW, clipGradNorm } from './optimiser.js';

describe('AdamW', () => {
  it('matches a hand-computed two-step example (decoupled decay, bias correction)', () => {
    // Computed with 40-digit decimals: p ← p − lr·wd·p − lr·m̂/(√v̂ + ε), β = (0.9, 0.999).
    const p = Float64Array.of(1, -2);
    const opt = new AdamW([p], { ...DEFAULT_ADAMW, learningRate: 0.1, weightDecay: 0.01 });
    opt.step([Float64Array.of(0.5, -0.1)]);
    expect(p[0]).toBeCloseTo(0.899000002, 14);
    expect(p[1]).toBeCloseTo(-1.89800001, 14);
    opt.step([Float64Array.of(-0.3, 0.2)]);
    expect(p[0]).toBeCloseTo(0.878951198939775, 14);
    expect(p[1]).toBeCloseTo(-1.932712360378489, 14);
    expect(opt.steps).toBe(2);
  });

  it('decays weights with a zero gradient by exactly lr·wd per step', () => {
    const p = Float64Array.of(0.5, -3);
    new AdamW([p], { ...DEFAULT_ADAMW, learningRate: 1e-4, weightDecay: 1e-4 }).step([
      new Float64Array(2),
    ]);
    expect(p[0]).toBe(0.5 - 1e-8 * 0.5);
    expect(p[1]).toBe(-3 - 1e-8 * -3);
    expect(p[0]).not.toBe(0.5); // float64 keeps a 1e-8 relative step
  });

  it('updates several parameter arrays, each with its own moments', () => {
    const x = Float64Array.of(1);
    const y = Float64Array.of(1);
    const opt = new AdamW([x, y], { ...DEFAULT_ADAMW, learningRate: 0.01, weightDecay: 0 });
    opt.step([Float64Array.of(1), Float64Array.of(-100)]);
    // the first Adam step has magnitude lr whatever the gradient's scale
    expect(x[0]).toBeCloseTo(0.99, 9);
    expect(y[0]).toBeCloseTo(1.01, 9);
    expect(() => opt.step([Float64Array.of(1)])).toThrow(/2 params/);
  });
});

describe('clipGradNorm', () => {
  it('scales all gradients together to the maximum norm and returns the norm before', () => {
    const a = Float64Array.of(3, 0);
    const b = Float64Array.of(4);
    expect(clipGradNorm([a, b], 1)).toBe(5);
    const coef = 1 / (5 + 1e-6);
    expect(a[0]).toBeCloseTo(3 * coef, 15);
    expect(b[0]).toBeCloseTo(4 * coef, 15);
    expect(Math.hypot(a[0]!, a[1]!, b[0]!)).toBeLessThanOrEqual(1);
  });

  it('leaves gradients below the maximum unchanged', () => {
    const a = Float64Array.of(0.3, 0.4);
    expect(clipGradNorm([a], 1)).toBeCloseTo(0.5, 15);
    expect(Array.from(a)).toEqual([0.3, 0.4]);
  });
});
