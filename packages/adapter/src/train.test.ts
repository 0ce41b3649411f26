import { ConfigError, LabelLeakError } from '@bfe/core';
import { describe, expect, it } from 'vitest';
import { AdapterInputError } from './errors.js';
import { syntheticQueries, type SyntheticOptions } from './testing/synthetic.js';
import { trainAdapter, trainAdapterAsync } from './train.js';
import type { TrainingInput, TrainingQuery } from './train-input.js';

const base: SyntheticOptions = {
  dim: 16,
  queries: 12,
  queryTokens: 3,
  memories: 6,
  memoryTokens: 4,
  queriesPerBank: 3,
  positives: 1,
  distortion: 2,
  noise: 2,
  seed: 1,
  prefix: 'tr-',
};

function splits(): TrainingInput {
  return {
    dim: base.dim,
    train: syntheticQueries(base),
    validation: syntheticQueries({ ...base, queries: 6, seed: 2, prefix: 'va-' }),
  };
}

describe('trainAdapter', () => {
  it('lowers the loss on a small separable problem', () => {
    const result = trainAdapter(splits(), {
      rank: 4,
      epochs: 6,
      batchSize: 4,
      learningRate: 0.02,
      seed: 3,
    });
    const { stepLosses, snapshots } = result;
    expect(stepLosses.length).toBe(18);
    const first = (stepLosses[0]! + stepLosses[1]! + stepLosses[2]!) / 3;
    const last = (stepLosses[15]! + stepLosses[16]! + stepLosses[17]!) / 3;
    console.log(`synthetic training: step loss ${first.toFixed(4)} → ${last.toFixed(4)}`);
    expect(last).toBeLessThan(0.8 * first);
    expect(snapshots.at(-1)!.validationLoss!).toBeLessThan(snapshots[0]!.validationLoss!);
    expect(result.epochLosses.at(-1)!).toBeLessThan(result.epochLosses[0]!);
  });

  it('returns E + 1 snapshots: epoch 0 is the identity, Δ norms grow from 0', () => {
    const result = trainAdapter(splits(), {
      rank: 4,
      epochs: 2,
      batchSize: 5,
      splitHash: 'split-abc',
      modelHash: 'model-xyz',
    });
    const { snapshots, report } = result;
    expect(snapshots.map((s) => s.epoch)).toEqual([0, 1, 2]);
    expect(snapshots[0]!.adapter.b.every((x) => x === 0)).toBe(true);
    expect(snapshots[0]!.deltaNorm).toBe(0);
    expect(snapshots[0]!.trainLoss).toBeNull();
    expect(snapshots[1]!.deltaNorm).toBeGreaterThan(0);
    expect(snapshots[2]!.deltaNorm).toBeGreaterThan(snapshots[1]!.deltaNorm);
    // Adam moves each weight by at most ~lr per step: 3 steps/epoch × 2 epochs
    expect(snapshots[2]!.deltaNorm).toBeLessThan(6 * 1e-4 * Math.sqrt(2 * 4 * 16));
    expect(report.stepsPerEpoch).toBe(3); // 12 queries / 5, rounded up
    expect(result.stepLosses.length).toBe(6);
    expect(result.gradNorms.length).toBe(6);
    expect(result.wallMs).toBeGreaterThan(0);
    const meta = snapshots[2]!.adapter.meta;
    expect(meta).toMatchObject({
      epoch: 2,
      seed: 42,
      splitHash: 'split-abc',
      modelHash: 'model-xyz',
    });
    expect(meta.trainingConfig).toMatchObject({
      rank: 4,
      epochs: 2,
      batchSize: 5,
      learningRate: 1e-4,
    });
    expect(snapshots[2]!.adapter.a).toBeInstanceOf(Float32Array);
  });

  it('is seeded: same seed gives identical weights, another seed different ones', () => {
    const options = { rank: 4, epochs: 2, batchSize: 4, learningRate: 0.01 };
    const x = trainAdapter(splits(), { ...options, seed: 5 }).snapshots[2]!.adapter;
    const y = trainAdapter(splits(), { ...options, seed: 5 }).snapshots[2]!.adapter;
    const z = trainAdapter(splits(), { ...options, seed: 6 }).snapshots[2]!.adapter;
    expect(y.a).toEqual(x.a);
    expect(y.b).toEqual(x.b);
    expect(z.a).not.toEqual(x.a);
    expect(z.b).not.toEqual(x.b);
  });

  it('trains identically when yielding to the event loop between steps (workers: 1)', async () => {
    const options = { rank: 4, epochs: 2, batchSize: 4, learningRate: 0.01, seed: 9 };
    const sync = trainAdapter(splits(), options);
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 0);
    // the js kernel: the default (onnxruntime) fuses MaxSim's backward, another summation order
    const async = await trainAdapterAsync(splits(), { ...options, workers: 1, kernel: 'js' });
    clearInterval(timer);
    expect(async.stepLosses).toEqual(sync.stepLosses);
    expect(async.snapshots[2]!.adapter.a).toEqual(sync.snapshots[2]!.adapter.a);
    expect(async.snapshots[2]!.adapter.b).toEqual(sync.snapshots[2]!.adapter.b);
    expect(ticks).toBeGreaterThan(0);
  });

  it('clips large gradients and counts the clipped steps', () => {
    const result = trainAdapter(splits(), { rank: 4, epochs: 1, batchSize: 4, clipNorm: 1e-6 });
    expect(result.clippedSteps).toBe(3);
    expect(Math.min(...result.gradNorms)).toBeGreaterThan(1e-6);
  });
});

describe('trainAdapter guard rails', () => {
  it('refuses a query in both train and validation', () => {
    const input = splits();
    const leaked = { ...input, validation: [...input.validation, input.train[0]!] };
    expect(() => trainAdapter(leaked)).toThrow(LabelLeakError);
  });

  it('refuses any key beyond dim, train and validation (no way in for test labels)', () => {
    const input = { ...splits(), test: syntheticQueries({ ...base, prefix: 'te-' }) };
    expect(() => trainAdapter(input as TrainingInput)).toThrow(/'test'.*no test query or label/);
  });

  it('refuses an empty validation split', () => {
    expect(() => trainAdapter({ ...splits(), validation: [] })).toThrow(ConfigError);
  });

  it('refuses a memory shared by train and validation under connected-bank only', () => {
    const input = splits();
    const validation = syntheticQueries({ ...base, queries: 3, seed: 9, prefix: 'va-' }).map(
      (q): TrainingQuery => ({ ...q, candidates: input.train[0]!.candidates }),
    );
    expect(() => trainAdapter({ ...input, validation })).toThrow(/memory id\(s\) appear in two/);
    expect(() =>
      trainAdapter(
        { ...input, validation },
        { policy: 'query-disjoint-shared-bank', epochs: 1, rank: 4 },
      ),
    ).not.toThrow();
  });

  it('refuses a train query without a positive, with its id', () => {
    const input = splits();
    const train = input.train.map((q, i) => (i === 2 ? { ...q, positives: [] } : q));
    expect(() => trainAdapter({ ...input, train })).toThrow(AdapterInputError);
    expect(() => trainAdapter({ ...input, train })).toThrow(/'tr-q2' has no relevant memory/);
  });

  it('skips queries without tokens (and validation ones without positives) and lists them', () => {
    const input = splits();
    const empty = new Float32Array(0);
    const train = input.train.map((q, i) => (i === 1 ? { ...q, tokens: empty } : q));
    const validation = input.validation.map((q, i) =>
      i === 0 ? { ...q, tokens: empty } : i === 1 ? { ...q, positives: [] } : q,
    );
    const { report } = trainAdapter({ ...input, train, validation }, { epochs: 1, rank: 4 });
    expect(report).toMatchObject({
      trainQueries: 11,
      trainGiven: 12,
      validationQueries: 4,
      validationGiven: 6,
      trainNoTokens: ['tr-q1'],
      validationNoTokens: ['va-q0'],
      validationNoPositive: ['va-q1'],
    });
  });

  it('refuses malformed data: shapes, NaN, positives, duplicate ids, bad options', () => {
    const input = splits();
    const q = input.train[0]!;
    const withFirst = (first: TrainingQuery): TrainingInput => ({
      ...input,
      train: [first, ...input.train.slice(1)],
    });
    const reason = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (error) {
        return error instanceof AdapterInputError ? error.reason : String(error);
      }
      return undefined;
    };
    expect(reason(() => trainAdapter(withFirst({ ...q, tokens: new Float32Array(5) })))).toBe(
      'bad-shape',
    );
    const nan = q.tokens.slice();
    nan[3] = Number.NaN;
    expect(reason(() => trainAdapter(withFirst({ ...q, tokens: nan })))).toBe('non-finite');
    expect(reason(() => trainAdapter(withFirst({ ...q, positives: [99] })))).toBe('bad-positive');
    expect(reason(() => trainAdapter(withFirst({ ...q, positives: [1, 1] })))).toBe('bad-positive');
    const badOffsets = { ...q.candidates, memoryOffsets: [0, 4, 2, 8, 12, 14, 18] };
    expect(reason(() => trainAdapter(withFirst({ ...q, candidates: badOffsets })))).toBe(
      'bad-shape',
    );
    expect(reason(() => trainAdapter({ ...input, train: [...input.train, { ...q }] }))).toBe(
      'duplicate-query',
    );
    expect(() => trainAdapter(input, { epochs: -1 })).toThrow(ConfigError);
    expect(() => trainAdapter(input, { rank: 17 })).toThrow(/rank 17 exceeds/);
    expect(() => trainAdapter(input, { learningRate: 0.1, nonsense: 1 } as never)).toThrow(
      ConfigError,
    );
  });
});
