import { AdapterInputError } from './errors.js';
import { applyAdapter, type AdapterParams } from './model.js';
import type { TrainingConfig } from './options.js';

/** Where an adapter came from; written into its file. */
export interface AdapterMeta {
  /** The training seed (also `trainingConfig.seed`). */
  readonly seed: number;
  /** Epochs trained: 0 is the identity adapter. */
  readonly epoch: number;
  /** Hash of the split the training queries came from, if the caller gave one. */
  readonly splitHash: string | null;
  /** Hash of the encoder model whose token states it adapts, if the caller gave one. */
  readonly modelHash: string | null;
  readonly trainingConfig: TrainingConfig;
}

/**
 * A trained (or identity) query adapter as it is stored and applied: float32 weights
 * `a [rank × dim]`, `b [dim × rank]` and its provenance.
 */
export interface Adapter extends AdapterParams<Float32Array> {
  readonly meta: AdapterMeta;
}

/**
 * The function the scorer calls on the query tokens of the sparse branch (and only there:
 * METHOD.md §4 leaves memory tokens and pooled vectors untouched). Returns new adapted tokens;
 * the input is not changed.
 * @throws {AdapterInputError} `dimension-mismatch` when `dim` is not the adapter's, `bad-shape`
 * when `tokens` does not hold `rows × dim` values.
 * @example
 * const transform = adapterQueryTransform(await loadAdapter('runs/x/adapter.json'));
 * const adapted = transform(queryTokens, 12, 384); // Float32Array [12 * 384]
 */
export function adapterQueryTransform(
  adapter: AdapterParams,
): (tokens: Float32Array, rows: number, dim: number) => Float32Array {
  return (tokens, rows, dim) => {
    if (dim !== adapter.dim) {
      throw new AdapterInputError(
        'dimension-mismatch',
        `The adapter was trained on ${adapter.dim}-d token states; these are ${dim}-d.`,
        { suggestion: 'Use the adapter trained with the encoder that made this bank.' },
      );
    }
    if (!Number.isInteger(rows) || rows < 0 || tokens.length !== rows * dim) {
      throw new AdapterInputError(
        'bad-shape',
        `Query tokens hold ${tokens.length} values, not ${rows} rows × ${dim}.`,
      );
    }
    return applyAdapter(adapter, tokens, rows);
  };
}
