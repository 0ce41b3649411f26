import type { Split } from '@bfe/core';
import type { Evaluation } from '@bfe/eval';
import type { FusionFloor } from '@bfe/scorer';
import type { FusionGridInput } from '../../score/fusion-grid.js';

/** Validation headline figures of one α of the grid. */
export interface AlphaFigures {
  readonly alpha: number;
  readonly ndcg10: number;
  readonly recall10: number;
}

/** One epoch's validation figures per α, for each adapter system's token floor. */
export interface EpochFigures {
  readonly epoch: number;
  /** The tail floor: the `adapted` system. */
  readonly tail: readonly AlphaFigures[];
  /** The zero floor `t_i = 0`: the `adapted-zero-floor` system. */
  readonly zero: readonly AlphaFigures[];
}

/** A system's selected configuration: the epoch, the α and the validation NDCG@10 they gave. */
export interface FloorSelection {
  readonly epoch: number;
  readonly alpha: number;
  readonly validationNdcg10: number;
}

/**
 * The configuration a system selects (METHOD.md §4): the highest validation NDCG@10 over
 * epoch × α, the first best in (epoch, grid) order — a later configuration must be strictly
 * better to replace it. `floor` names the system: `tail` for `adapted`, `zero` for
 * `adapted-zero-floor`; each system is selected on its own figures only.
 *
 * @throws Error when no epoch has a figure.
 * @example
 * selectBest([{ epoch: 0, tail: [{ alpha: 0.25, ndcg10: 0.5, recall10: 0.6 }], zero: […] }], 'tail');
 * // { epoch: 0, alpha: 0.25, validationNdcg10: 0.5 }
 */
export function selectBest(figures: readonly EpochFigures[], floor: FusionFloor): FloorSelection {
  let best: FloorSelection | undefined;
  for (const epoch of figures) {
    for (const v of epoch[floor]) {
      if (best === undefined || v.ndcg10 > best.validationNdcg10) {
        best = { epoch: epoch.epoch, alpha: v.alpha, validationNdcg10: v.ndcg10 };
      }
    }
  }
  if (best === undefined)
    throw new Error(`selectBest: no validation figure for the ${floor} floor`);
  return best;
}

/** Inputs of {@link selectOnValidation}. */
export interface SelectOnValidationInput<S extends { readonly epoch: number }> {
  /** The trained snapshots, epoch 0 (the identity) first. */
  readonly snapshots: readonly S[];
  readonly split: Split;
  readonly alphas: readonly number[];
  /** A snapshot's adapted query tokens (every query row of the bank). */
  readonly queryTokensOf: (snapshot: S) => Float32Array;
  /**
   * Evaluates the fusion grids of both floors with the given query tokens on the given
   * queries (`evaluateFusionGrids`); handed the split's validation query ids only.
   */
  readonly evaluate: (
    grid: Pick<FusionGridInput, 'queryIds' | 'queryTokens' | 'alphas'>,
  ) => Promise<ReadonlyMap<FusionFloor, ReadonlyMap<number, Evaluation>>>;
  readonly onSnapshot?: (done: number, total: number) => void;
}

/** What {@link selectOnValidation} found. */
export interface ValidationSelection {
  /** Per snapshot, in order: validation NDCG@10 and Recall@10 per α for both floors. */
  readonly figures: readonly EpochFigures[];
  /** `adapted`'s selection (tail floor) and `adapted-zero-floor`'s (zero floor). */
  readonly selected: { readonly tail: FloorSelection; readonly zero: FloorSelection };
}

/**
 * Scores every snapshot's sparse fusion on the split's validation queries, with both token
 * floors from one search per snapshot, and selects each adapter system's epoch and α on its
 * own validation NDCG@10 ({@link selectBest}). Only validation query ids reach `evaluate`:
 * neither train nor test labels can move a selection.
 */
export async function selectOnValidation<S extends { readonly epoch: number }>(
  input: SelectOnValidationInput<S>,
): Promise<ValidationSelection> {
  const queryIds: ReadonlySet<string> = new Set(input.split.queries.validation);
  const figures: EpochFigures[] = [];
  for (const snapshot of input.snapshots) {
    const grids = await input.evaluate({
      queryIds,
      queryTokens: input.queryTokensOf(snapshot),
      alphas: input.alphas,
    });
    const of = (floor: FusionFloor): AlphaFigures[] =>
      input.alphas.map((alpha) => {
        const m = grids.get(floor)?.get(alpha)?.metrics;
        if (m === undefined)
          throw new Error(`selectOnValidation: no ${floor} figure at α ${alpha}`);
        return { alpha, ndcg10: m['ndcg@10'] ?? 0, recall10: m['recall@10'] ?? 0 };
      });
    figures.push({ epoch: snapshot.epoch, tail: of('tail'), zero: of('zero') });
    input.onSnapshot?.(figures.length, input.snapshots.length);
  }
  return {
    figures,
    selected: { tail: selectBest(figures, 'tail'), zero: selectBest(figures, 'zero') },
  };
}
