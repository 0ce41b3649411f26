import { ConfigError } from '@bfe/core';

/** The parts of an experiment {@link checkCrossFit} reads (a structural slice of it). */
interface CrossFitView {
  readonly split: {
    readonly policy: string;
    readonly seed: number | 'per-seed';
    readonly evaluate: string;
    readonly folds?: number | undefined;
  };
  readonly scorer: { readonly kSweep: readonly number[] };
}

/**
 * Refuses what cross-fitting (`split.folds`, METHOD.md §8) cannot mean: the folds fix every
 * part's share (test one fold, validation the previous fold, train the rest), so `ratios`
 * given beside `folds` are refused rather than silently ignored; every fold is tested, so the
 * evaluated part is `test`; one fold assignment is shared by the training seeds, so
 * `split.seed: per-seed` is refused; and the k sweep is not pooled across folds, so it must be
 * empty. `raw` is the experiment as written (to tell given ratios from the default).
 *
 * @throws ConfigError naming the file and the field.
 * @example
 * checkCrossFit(raw, experiment, 'configs/experiments/locomo-minilm-crossfit.yaml');
 */
export function checkCrossFit(raw: unknown, e: CrossFitView, source: string): void {
  const folds = e.split.folds;
  if (folds === undefined) return;
  const split = (raw as { split?: Record<string, unknown> } | undefined)?.split;
  const refuse = (field: string, why: string, suggestion: string): never => {
    throw new ConfigError(`${source}: ${field} ${why} (split.folds is ${folds})`, { suggestion });
  };
  if (split?.ratios !== undefined) {
    refuse(
      'split.ratios',
      'cannot be given with split.folds: each fold tests one fold of units, validates on the previous fold and trains on the rest',
      'Remove split.ratios; the folds fix every part’s share.',
    );
  }
  if (e.split.policy === 'none') {
    refuse('split.policy', "is 'none': there are no units to fold", 'Use connected-bank.');
  }
  if (e.split.evaluate !== 'test') {
    refuse(
      'split.evaluate',
      `is '${e.split.evaluate}': a cross-fitted run reports every fold's test part`,
      'Remove split.evaluate.',
    );
  }
  if (e.split.seed === 'per-seed') {
    refuse(
      'split.seed',
      "is 'per-seed': one fold assignment is shared by every training seed",
      'Give split.seed an integer (default 42).',
    );
  }
  if (e.scorer.kSweep.length > 0) {
    refuse(
      'scorer.kSweep',
      'is not empty: the k sweep is not pooled across folds',
      'Write scorer.kSweep: [] (run the strict split for a k sweep).',
    );
  }
}
