import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, RelevanceLabels, type Split } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { Prng, parseTrainOptions, saveAdapter, trainingConfigOf, type Adapter } from '@bfe/adapter';
import type { BankSide, FileBankSide, OpenedBank } from '@bfe/encoder';
import { evaluate, type Evaluation } from '@bfe/eval';
import type { FusionFloor } from '@bfe/scorer';
import {
  ADAPTER_FILE,
  ZERO_FLOOR_ADAPTER_FILE,
  adaptAll,
  loadSelectedAdapter,
  readTrainingRecord,
  type TrainingRecord,
} from './adapt-record.js';
import { selectBest, selectOnValidation, type EpochFigures } from './adapt-select.js';

const ALPHAS = [0.25, 0.5, 0.75];
const MEMORIES = ['m0', 'm1', 'm2', 'm3'];

/**
 * Where each validation query's relevant memory (m0) is ranked, per floor, epoch and α: the
 * tail floor is best at epoch 2, α 0.25; the zero floor at epoch 1, α 0.75.
 */
const VALIDATION_RANK: Record<FusionFloor, number[][]> = {
  tail: [
    [3, 3, 3],
    [2, 3, 3],
    [1, 2, 3],
  ],
  zero: [
    [3, 3, 3],
    [3, 3, 1],
    [2, 2, 2],
  ],
};

/** A ranking with `first` at position `at` (1-based) and the others in id order. */
function rankingWith(first: string, at: number): string[] {
  const rest = MEMORIES.filter((m) => m !== first);
  return [...rest.slice(0, at - 1), first, ...rest.slice(at - 1)];
}

const split = {
  queries: { train: ['r1'], validation: ['v1', 'v2'], test: ['t1', 't2'] },
} as unknown as Split;

/**
 * Labels: m0 relevant for every query; `testRelevant` for the test queries, whose rankings put
 * m3 first only at the zero floor, epoch 0, α 0.5 — were test queries evaluated, relabelling
 * them to m3 would move the zero-floor selection there.
 */
function labelsWith(testRelevant: string, validationRelevant = 'm0'): RelevanceLabels {
  const labels = new RelevanceLabels();
  labels.add('r1', 'm0');
  for (const q of split.queries.validation) labels.add(q, validationRelevant);
  for (const q of split.queries.test) labels.add(q, testRelevant);
  return labels;
}

/** The fake scorer: each (snapshot, floor, α)'s rankings of whichever queries it is handed. */
function evaluator(labels: RelevanceLabels, calls: Set<string>[]) {
  let snapshot = 0;
  return async (grid: { queryIds: ReadonlySet<string>; alphas: readonly number[] }) => {
    const epoch = snapshot++;
    calls.push(new Set(grid.queryIds));
    const ids = [...grid.queryIds];
    const out = new Map<FusionFloor, Map<number, Evaluation>>();
    for (const floor of ['tail', 'zero'] as const) {
      const perAlpha = new Map<number, Evaluation>();
      grid.alphas.forEach((alpha, a) => {
        const runs = new Map(
          ids.map((q) => {
            if (q.startsWith('t')) {
              const leak = floor === 'zero' && epoch === 0 && alpha === 0.5;
              return [q, leak ? rankingWith('m3', 1) : rankingWith('m0', 1)];
            }
            return [q, rankingWith('m0', VALIDATION_RANK[floor][epoch]![a]!)];
          }),
        );
        perAlpha.set(
          alpha,
          evaluate({
            runs,
            labels,
            candidates: new Map(ids.map((q) => [q, new Set(MEMORIES)])),
            subtaskOf: new Map(ids.map((q) => [q, 'single'])),
            subtasks: ['single'],
            ks: [10],
          }),
        );
      });
      out.set(floor, perAlpha);
    }
    return out;
  };
}

async function select(labels: RelevanceLabels, calls: Set<string>[] = []) {
  return selectOnValidation({
    snapshots: [{ epoch: 0 }, { epoch: 1 }, { epoch: 2 }],
    split,
    alphas: ALPHAS,
    queryTokensOf: () => new Float32Array(0),
    evaluate: evaluator(labels, calls),
  });
}

describe('selectOnValidation', () => {
  it("selects each adapter system's own epoch and α on its own validation NDCG@10", async () => {
    const { selected, figures } = await select(labelsWith('m0'));
    expect(selected.tail).toEqual({ epoch: 2, alpha: 0.25, validationNdcg10: 1 });
    expect(selected.zero).toEqual({ epoch: 1, alpha: 0.75, validationNdcg10: 1 });
    expect(figures.map((f) => f.epoch)).toEqual([0, 1, 2]);
    expect(figures[1]!.zero.map((v) => v.alpha)).toEqual(ALPHAS);
    expect(figures[1]!.zero[2]!.ndcg10).toBe(1);
    expect(figures[1]!.tail[2]!.ndcg10).toBeLessThan(1);
  });

  it('hands the evaluator the validation queries only: test labels cannot move a selection', async () => {
    const calls: Set<string>[] = [];
    const reference = await select(labelsWith('m0'), calls);
    expect(calls).toHaveLength(3);
    for (const ids of calls) expect([...ids].sort()).toEqual(['v1', 'v2']);
    const relabelled = await select(labelsWith('m3'));
    expect(relabelled).toEqual(reference);
    // The check can fail: the same change to the validation labels moves the selections.
    const moved = await select(labelsWith('m0', 'm3'));
    expect(moved.selected).not.toEqual(reference.selected);
  });
});

describe('selectBest', () => {
  const figures = (tail: number[][], zero: number[][]): EpochFigures[] =>
    tail.map((row, epoch) => ({
      epoch,
      tail: row.map((ndcg10, a) => ({ alpha: ALPHAS[a]!, ndcg10, recall10: 0 })),
      zero: zero[epoch]!.map((ndcg10, a) => ({ alpha: ALPHAS[a]!, ndcg10, recall10: 0 })),
    }));

  it('keeps the first best in (epoch, grid) order, per floor', () => {
    const f = figures(
      [
        [0.5, 0.6, 0.6],
        [0.6, 0.4, 0.4],
      ],
      [
        [0.3, 0.3, 0.3],
        [0.2, 0.2, 0.7],
      ],
    );
    expect(selectBest(f, 'tail')).toEqual({ epoch: 0, alpha: 0.5, validationNdcg10: 0.6 });
    expect(selectBest(f, 'zero')).toEqual({ epoch: 1, alpha: 0.75, validationNdcg10: 0.7 });
    expect(() => selectBest([], 'zero')).toThrow(/no validation figure/);
  });
});

function adapterOf(seed: number, epoch: number, dim: number, rank = 2): Adapter {
  const prng = new Prng(seed);
  return {
    dim,
    rank,
    a: new Float32Array(rank * dim).map(() => 0.3 * prng.normal()),
    b: new Float32Array(dim * rank).map(() => 0.3 * prng.normal()),
    meta: {
      seed: 42,
      epoch,
      splitHash: null,
      modelHash: null,
      trainingConfig: trainingConfigOf(parseTrainOptions({ rank })),
    },
  };
}

function record(zeroEpoch: number): TrainingRecord {
  const figures = ALPHAS.map((alpha) => ({ alpha, ndcg10: 0.5, recall10: 0.5 }));
  return {
    schemaVersion: 2,
    seed: 42,
    splitHash: 'h',
    modelSha256: 'm',
    trainQueries: 1,
    validationQueries: 2,
    skipped: { trainNoTokens: [], trainNoPositive: [], validationNoPositive: [] },
    stepsPerEpoch: 1,
    steps: [1, 0.9],
    epochs: [0, 1, 2].map((epoch) => ({
      epoch,
      trainLoss: epoch === 0 ? null : 1,
      validationLoss: 1,
      deltaNorm: epoch,
      validation: figures,
      validationZeroFloor: figures,
    })),
    selected: {
      epoch: 2,
      alpha: 0.25,
      validationNdcg10: 0.6,
      deltaNorm: 2,
      zeroFloor: { epoch: zeroEpoch, alpha: 0.75, validationNdcg10: 0.4, deltaNorm: zeroEpoch },
    },
    clippedSteps: 0,
  };
}

describe('loadSelectedAdapter', () => {
  const dim = 6;
  const tokens = new Float32Array(3 * dim).map((_, i) => Math.sin(i + 1));
  const bank = { dim, queries: { tokenVectors: tokens } } as unknown as OpenedBank<
    BankSide | FileBankSide
  >;

  it("gives adapted-zero-floor its own snapshot's query tokens and α", async () => {
    const dir = tmpDir('bfe-adapt-select-');
    const tail = adapterOf(1, 2, dim);
    const zero = adapterOf(2, 1, dim);
    await saveAdapter(join(dir, ADAPTER_FILE), tail);
    await saveAdapter(join(dir, ZERO_FLOOR_ADAPTER_FILE), zero);
    await writeFile(join(dir, 'training.json'), JSON.stringify(record(1)));
    const loaded = await loadSelectedAdapter(dir, bank);
    expect(loaded.alpha).toBe(0.25);
    expect(loaded.zeroFloor.alpha).toBe(0.75);
    expect(loaded.queryTokens).toEqual(adaptAll(bank, tail));
    expect(loaded.zeroFloor.queryTokens).toEqual(adaptAll(bank, zero));
    expect(loaded.zeroFloor.queryTokens).not.toEqual(loaded.queryTokens);
    expect(loaded.meta).toMatchObject({
      selectedEpoch: 2,
      selectedAlpha: 0.25,
      zeroFloor: { selectedEpoch: 1, selectedAlpha: 0.75, identity: false },
    });

    // The same epoch selected by both: one array, shared by the two systems' passes.
    await writeFile(join(dir, 'training.json'), JSON.stringify(record(2)));
    const same = await loadSelectedAdapter(dir, bank);
    expect(same.zeroFloor.queryTokens).toBe(same.queryTokens);
  });

  it('refuses a training record without the zero floor’s own selection (version 1)', async () => {
    const dir = tmpDir('bfe-adapt-select-');
    // A version 1 record: no schemaVersion, no zero-floor figures, no zero-floor selection.
    const v1 = JSON.parse(JSON.stringify(record(1))) as Record<string, unknown> & {
      epochs: Record<string, unknown>[];
      selected: Record<string, unknown>;
    };
    delete v1.schemaVersion;
    delete v1.selected.zeroFloor;
    for (const e of v1.epochs) delete e.validationZeroFloor;
    await writeFile(join(dir, 'training.json'), JSON.stringify(v1));
    await expect(readTrainingRecord(dir)).rejects.toThrow(ArtifactCorruptError);
    await expect(readTrainingRecord(dir)).rejects.toThrow(/version 1, not 2/);
  });
});
