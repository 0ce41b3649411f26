import { availableParallelism } from 'node:os';
import { ConfigError, LabelLeakError } from '@bfe/core';
import { afterEach, describe, expect, it } from 'vitest';
import { trainWorkerCounts } from './loss-pool.js';
import { partition } from './step-plan.js';
import { syntheticQueries, type SyntheticOptions } from '../testing/synthetic.js';
import { relativeError } from '../testing/reference.js';
import { trainAdapter, trainAdapterAsync, type TrainResult } from '../train.js';
import type { TrainingInput, TrainingQuery } from '../train-input.js';

const base: SyntheticOptions = {
  dim: 16,
  queries: 14,
  queryTokens: 3,
  memories: 6,
  memoryTokens: 4,
  queriesPerBank: 4,
  positives: 1,
  distortion: 2,
  noise: 2,
  seed: 1,
  prefix: 'tr-',
};

function splits(): TrainingInput {
  // query token counts differ, so the cost-balanced shares differ from an even split
  const train = syntheticQueries(base).map((q, i): TrainingQuery =>
    i % 3 === 0 ? { ...q, tokens: q.tokens.slice(0, base.dim) } : q,
  );
  return {
    dim: base.dim,
    train,
    validation: syntheticQueries({ ...base, queries: 7, seed: 2, prefix: 'va-' }),
  };
}

// 14 queries in batches of 4: three full batches and one of 2, so with 3 workers one is idle
const options = { rank: 4, epochs: 3, batchSize: 4, learningRate: 0.01, seed: 9 };

function expectIdentical(x: TrainResult, y: TrainResult): void {
  expect(y.stepLosses).toEqual(x.stepLosses);
  expect(y.gradNorms).toEqual(x.gradNorms);
  expect(y.snapshots.map((s) => s.validationLoss)).toEqual(
    x.snapshots.map((s) => s.validationLoss),
  );
  for (let e = 0; e < x.snapshots.length; e++) {
    expect(y.snapshots[e]!.adapter.a).toEqual(x.snapshots[e]!.adapter.a);
    expect(y.snapshots[e]!.adapter.b).toEqual(x.snapshots[e]!.adapter.b);
  }
}

function expectClose(x: TrainResult, y: TrainResult, tolerance: number): void {
  expect(y.stepLosses.length).toBe(x.stepLosses.length);
  for (let i = 0; i < x.stepLosses.length; i++) {
    expect(Math.abs(y.stepLosses[i]! - x.stepLosses[i]!)).toBeLessThan(
      tolerance * Math.abs(x.stepLosses[i]!),
    );
  }
  for (let e = 0; e < x.snapshots.length; e++) {
    const [p, q] = [x.snapshots[e]!, y.snapshots[e]!];
    expect(Math.abs(q.validationLoss! - p.validationLoss!)).toBeLessThan(
      tolerance * p.validationLoss!,
    );
    expect(relativeError(q.adapter.a, p.adapter.a)).toBeLessThan(tolerance);
    expect(relativeError(q.adapter.b, p.adapter.b)).toBeLessThanOrEqual(tolerance);
  }
}

afterEach(() => {
  delete process.env.BFE_FAULT_ADAPTER_WORKER;
});

describe('trainAdapterAsync with worker threads', () => {
  it('is deterministic for a worker count and matches one thread to 1e-9', async () => {
    const one = await trainAdapterAsync(splits(), { ...options, workers: 1, kernel: 'js' });
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 0);
    const two = await trainAdapterAsync(splits(), { ...options, workers: 2, kernel: 'js' });
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(0); // the event loop ran while the workers computed
    const twoAgain = await trainAdapterAsync(splits(), { ...options, workers: 2, kernel: 'js' });
    const three = await trainAdapterAsync(splits(), { ...options, workers: 3, kernel: 'js' });
    expect(one.options.workers).toBe(1);
    expect(two.options.workers).toBe(2);
    expectIdentical(two, twoAgain);
    expectClose(one, two, 1e-9);
    expectClose(one, three, 1e-9);
    // the parallel runs really trained (the comparison is not between two untouched adapters)
    expect(two.snapshots.at(-1)!.deltaNorm).toBeGreaterThan(1e-3);
    expect(trainWorkerCounts().live).toBe(0);
  });

  it('keeps the single-thread path bit-identical to trainAdapter with workers: 1', async () => {
    const sync = trainAdapter(splits(), options);
    expect(sync.options.workers).toBe(1);
    expect(sync.options.kernel).toBe('js');
    const before = trainWorkerCounts().started;
    expectIdentical(
      sync,
      await trainAdapterAsync(splits(), { ...options, workers: 1, kernel: 'js' }),
    );
    expect(trainWorkerCounts().started).toBe(before); // js on one thread: no worker
  });

  it('matches the js kernel per worker count: onnxruntime-js bit for bit, onnxruntime to 1e-12', async () => {
    // 3 workers: the last batch's 2 queries leave one worker's run empty (it still takes items)
    for (const workers of [1, 2, 3]) {
      const js = await trainAdapterAsync(splits(), { ...options, workers, kernel: 'js' });
      const onnx = await trainAdapterAsync(splits(), { ...options, workers });
      expect(onnx.options.kernel).toBe('onnxruntime'); // the default (MatMul + WebAssembly)
      // MaxSim's backward fused into the maxima: the same losses up to float64 rounding
      expectClose(js, onnx, 1e-12);
      const onnxJs = await trainAdapterAsync(splits(), {
        ...options,
        workers,
        kernel: 'onnxruntime-js',
      });
      expectIdentical(js, onnxJs);
      // deterministic: the same bits on every run for a worker count
      expectIdentical(onnx, await trainAdapterAsync(splits(), { ...options, workers }));
    }
    expect(trainWorkerCounts().live).toBe(0);
  });

  it('defaults to min(2, available cores) workers on the onnxruntime kernel', async () => {
    const before = trainWorkerCounts().started;
    const result = await trainAdapterAsync(splits(), { ...options, epochs: 1 });
    const expected = Math.min(2, availableParallelism());
    expect(result.options.workers).toBe(expected);
    expect(result.options.kernel).toBe('onnxruntime');
    // onnxruntime runs in the workers, also when there is one
    expect(trainWorkerCounts().started - before).toBe(expected);
  });

  it('rejects when a worker fails, and stops every worker', async () => {
    const before = trainWorkerCounts();
    process.env.BFE_FAULT_ADAPTER_WORKER = '1:3'; // worker 1's third request
    let steps = 0;
    const run = trainAdapterAsync(
      splits(),
      { ...options, workers: 2 },
      { onStep: () => (steps += 1) },
    );
    await expect(run).rejects.toThrow(/worker 1 failed: injected fault on request 3/);
    // request 1 is the validation loss of epoch 0, requests 2 and 3 the first two batches
    expect(steps).toBe(1);
    expect(trainWorkerCounts()).toEqual({ started: before.started + 2, live: 0 });
  });

  it('rejects, without waiting forever, when a worker fails inside a step item', async () => {
    const before = trainWorkerCounts();
    // worker 1 throws as it takes an item of its third request, its results never written:
    // worker 0, whose run may need them, must give up instead of waiting for them
    process.env.BFE_FAULT_ADAPTER_WORKER = '1:3:item';
    let steps = 0;
    const run = trainAdapterAsync(
      splits(),
      { ...options, workers: 2 },
      { onStep: () => (steps += 1) },
    );
    await expect(run).rejects.toThrow(
      /worker [01] failed: (injected fault on request 3|training step abandoned)/,
    );
    expect(steps).toBe(1);
    expect(trainWorkerCounts()).toEqual({ started: before.started + 2, live: 0 });
  });

  it('rejects when a worker fails to start, and stops every worker', async () => {
    const before = trainWorkerCounts();
    process.env.BFE_FAULT_ADAPTER_WORKER = '0:0';
    let steps = 0;
    const run = trainAdapterAsync(
      splits(),
      { ...options, workers: 2 },
      { onStep: () => (steps += 1) },
    );
    await expect(run).rejects.toThrow(/worker 0 failed: injected fault at start/);
    expect(steps).toBe(0);
    expect(trainWorkerCounts()).toEqual({ started: before.started + 2, live: 0 });
  });

  it('rejects when a hook throws, and stops every worker', async () => {
    const before = trainWorkerCounts();
    const run = trainAdapterAsync(
      splits(),
      { ...options, workers: 2 },
      {
        onStep: ({ step }) => {
          if (step === 1) throw new Error('hook failed');
        },
      },
    );
    await expect(run).rejects.toThrow('hook failed');
    expect(trainWorkerCounts()).toEqual({ started: before.started + 2, live: 0 });
  });

  it('refuses leaks and bad input before any worker starts', async () => {
    const before = trainWorkerCounts().started;
    const input = splits();
    const parallel = { ...options, workers: 2 };
    await expect(
      trainAdapterAsync({ ...input, validation: [...input.validation, input.train[0]!] }, parallel),
    ).rejects.toThrow(LabelLeakError);
    const withTest = { ...input, test: syntheticQueries({ ...base, prefix: 'te-' }) };
    await expect(trainAdapterAsync(withTest as TrainingInput, parallel)).rejects.toThrow(
      /'test'.*no test query or label/,
    );
    const shared = syntheticQueries({ ...base, queries: 3, seed: 9, prefix: 'va-' }).map(
      (q): TrainingQuery => ({ ...q, candidates: input.train[0]!.candidates }),
    );
    await expect(trainAdapterAsync({ ...input, validation: shared }, parallel)).rejects.toThrow(
      /memory id\(s\) appear in two/,
    );
    await expect(trainAdapterAsync({ ...input, validation: [] }, parallel)).rejects.toThrow(
      ConfigError,
    );
    await expect(trainAdapterAsync(input, { ...parallel, rank: 17 })).rejects.toThrow(
      /rank 17 exceeds/,
    );
    await expect(trainAdapterAsync(input, { ...parallel, workers: 0 })).rejects.toThrow(
      ConfigError,
    );
    expect(trainWorkerCounts().started).toBe(before);
  });

  it('keeps trainAdapter single-threaded: workers other than 1 is a ConfigError', () => {
    expect(() => trainAdapter(splits(), { ...options, workers: 2 })).toThrow(
      /single-threaded; workers: 2 needs trainAdapterAsync/,
    );
  });

  it('keeps trainAdapter on the js kernel: kernel onnxruntime is a ConfigError', () => {
    expect(() => trainAdapter(splits(), { ...options, kernel: 'onnxruntime' })).toThrow(
      /kernel: onnxruntime needs trainAdapterAsync/,
    );
    expect(() => trainAdapter(splits(), { ...options, kernel: 'gpu' as 'js' })).toThrow(
      ConfigError,
    );
  });
});

describe('partition', () => {
  it('cuts costs into contiguous runs of about equal total cost', () => {
    expect(partition(Float64Array.of(1, 1, 1, 3), 2)).toEqual([0, 3, 4]);
    expect(partition(Float64Array.of(1, 1, 1, 1), 2)).toEqual([0, 2, 4]);
    expect(partition(Float64Array.of(5, 1, 1, 1, 1, 1), 2)).toEqual([0, 1, 6]);
    expect(partition(Float64Array.of(1, 2), 3)).toEqual([0, 1, 1, 2]);
    expect(partition(new Float64Array(0), 2)).toEqual([0, 0, 0]);
    expect(partition(Float64Array.of(0, 0, 0), 2)).toEqual([0, 3, 3]);
  });

  it('covers every item once, in order, with no run above the mean plus one item', () => {
    for (let seed = 1; seed <= 50; seed++) {
      let s = seed;
      const costs = Float64Array.from({ length: 1 + (seed % 17) }, () => {
        s = (s * 1103515245 + 12345) % 2147483648;
        return 1 + (s % 1000);
      });
      const parts = 1 + (seed % 4);
      const bounds = partition(costs, parts);
      expect(bounds.length).toBe(parts + 1);
      expect(bounds[0]).toBe(0);
      expect(bounds[parts]).toBe(costs.length);
      const total = costs.reduce((x, y) => x + y, 0);
      const largest = Math.max(...costs);
      for (let w = 0; w < parts; w++) {
        expect(bounds[w + 1]!).toBeGreaterThanOrEqual(bounds[w]!);
        const run = costs.slice(bounds[w], bounds[w + 1]).reduce((x, y) => x + y, 0);
        expect(run).toBeLessThanOrEqual(total / parts + largest);
      }
    }
  });
});
