import { describe, expect, it } from 'vitest';
import { adapterQueryTransform, type Adapter } from './adapter.js';
import { AdapterInputError } from './errors.js';
import { applyAdapter, initAdapterParams } from './model.js';
import { parseTrainOptions, trainingConfigOf } from './options.js';
import { Prng } from './prng.js';
import { unitRows } from './testing/reference.js';

function adapterFrom(b: number): Adapter {
  const p = initAdapterParams(16, 4, 1);
  return {
    dim: 16,
    rank: 4,
    a: Float32Array.from(p.a),
    b: new Float32Array(64).fill(b),
    meta: {
      seed: 1,
      epoch: b === 0 ? 0 : 1,
      splitHash: null,
      modelHash: null,
      trainingConfig: trainingConfigOf(parseTrainOptions({ rank: 4 })),
    },
  };
}

describe('adapterQueryTransform', () => {
  const tokens = new Float32Array(unitRows(3, 16, new Prng(2)));

  it('is the identity for an epoch-0 adapter and applyAdapter otherwise', () => {
    expect(adapterQueryTransform(adapterFrom(0))(tokens, 3, 16)).toEqual(tokens);
    const trained = adapterFrom(0.05);
    const out = adapterQueryTransform(trained)(tokens, 3, 16);
    expect(out).toEqual(applyAdapter(trained, tokens, 3));
    expect(out).not.toEqual(tokens);
  });

  it('refuses tokens of another dimension or shape', () => {
    const transform = adapterQueryTransform(adapterFrom(0));
    expect(() => transform(new Float32Array(24), 3, 8)).toThrow(AdapterInputError);
    expect(() => transform(new Float32Array(24), 3, 8)).toThrow(/16-d token states; these are 8-d/);
    expect(() => transform(new Float32Array(40), 3, 16)).toThrow(/not 3 rows × 16/);
  });
});
