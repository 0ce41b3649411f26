import { ConfigError } from '@bfe/core';
import { z } from 'zod';

/**
 * `adapter.from` (adapter transfer): the path of another experiment file, taken relative to this
 * one, whose adapter is applied to this experiment's evaluated queries. That source experiment's
 * dataset, encode, split and adapt stages run through the same cache (a cached source adapter is
 * reused): the adapter is trained on the source's train part and selected (epoch, α, and
 * `adapted-zero-floor`'s own epoch and α) on its validation part, with the source's adapter
 * settings, at this experiment's training seed. Nothing of this experiment's labels reaches it.
 *
 * @example
 * adapterFromSchema.parse('../locomo-minilm.yaml'); // '../locomo-minilm.yaml'
 */
export const adapterFromSchema = z
  .string()
  .min(1)
  .regex(/\.(ya?ml|json)$/, 'an experiment file (.yaml, .yml or .json)');

/** The parts of an experiment {@link checkAdapter} reads (a structural slice of it). */
interface AdapterView {
  readonly split: { readonly policy: string; readonly folds?: number | undefined };
  readonly adapter: { readonly enabled: boolean; readonly from?: string | undefined };
}

/**
 * Refuses an adapter the method cannot train or select: `adapter.enabled` without a split (no
 * train or validation queries). With `adapter.from` the adapter is the source experiment's, so
 * any other `adapter` key written beside it is refused (it would be silently ignored), and so is
 * `split.folds` (a transferred adapter over cross-fitted folds is not supported). `raw` is the
 * experiment as written (to tell written keys from defaults).
 *
 * @throws ConfigError naming the file and the field.
 * @example
 * checkAdapter(raw, experiment, 'configs/experiments/transfer/locomo-to-longmemeval-s.yaml');
 */
export function checkAdapter(raw: unknown, e: AdapterView, source: string): void {
  const from = e.adapter.from;
  if (from !== undefined) {
    const section = (raw as { adapter?: Record<string, unknown> } | undefined)?.adapter ?? {};
    const beside = Object.keys(section).filter((key) => key !== 'from');
    if (beside.length > 0) {
      throw new ConfigError(
        `${source}: ${beside.map((key) => `adapter.${key}`).join(', ')} cannot be given with ` +
          `adapter.from: the transferred adapter is trained with ${from}'s adapter settings`,
        { suggestion: `Set them in ${from}, or remove adapter.from.` },
      );
    }
    if (e.split.folds !== undefined) {
      throw new ConfigError(
        `${source}: adapter.from cannot be combined with split.folds (${e.split.folds}): a ` +
          'transferred adapter over cross-fitted folds is not supported',
        { suggestion: 'Remove split.folds (the strict split or split.policy: none).' },
      );
    }
    return;
  }
  if (e.adapter.enabled && e.split.policy === 'none') {
    throw new ConfigError(
      `${source}: adapter.enabled needs a split (train and validation queries); split.policy is 'none'`,
      { suggestion: 'Or apply an adapter trained elsewhere with adapter.from: <experiment file>.' },
    );
  }
}
