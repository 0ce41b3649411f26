/**
 * Guard rails that keep test labels (and test memories, under the strict policy) out of
 * training and selection (METHOD.md §4–5).
 */
import { ConfigError, LabelLeakError, type SplitPolicy } from '@bfe/core';

/** Ids per split. `test` may be listed so that overlaps with it are caught too. */
export interface SplitIds {
  readonly train: readonly string[];
  readonly validation: readonly string[];
  readonly test?: readonly string[];
}

/** What {@link assertTrainable} checks: the policy, query ids per split, memory ids per split. */
export interface TrainableSplit {
  readonly policy: SplitPolicy;
  readonly queryIds: SplitIds;
  /** Required under `connected-bank`; ignored under `query-disjoint-shared-bank`. */
  readonly memoryIds?: SplitIds;
}

const SPLITS = ['train', 'validation', 'test'] as const;

/**
 * Refuses a split that training must not use:
 * - `train` or `validation` without queries (`ConfigError`: without validation no epoch can be
 *   selected, METHOD.md §4);
 * - a query id in two splits (`LabelLeakError`);
 * - under `connected-bank` (the strict default): memory ids not given (`ConfigError`), or a
 *   memory id in two splits (`LabelLeakError`). `query-disjoint-shared-bank` shares memories
 *   by design (METHOD.md §5) and is only checked for queries.
 * @example
 * assertTrainable({
 *   policy: 'connected-bank',
 *   queryIds: { train: ['q1', 'q2'], validation: ['q3'], test: ['q4'] },
 *   memoryIds: { train: ['m1', 'm2'], validation: ['m3'], test: ['m4'] },
 * }); // passes; listing 'm1' under validation too throws LabelLeakError
 */
export function assertTrainable(split: TrainableSplit): void {
  const { policy, queryIds, memoryIds } = split;
  if (queryIds.train.length === 0) {
    throw new ConfigError('The train split has no queries: there is nothing to train on.');
  }
  if (queryIds.validation.length === 0) {
    throw new ConfigError(
      'The validation split has no queries: the adapter epoch is selected on validation only, ' +
        'so training without one is refused.',
      { suggestion: 'Make a split with a non-empty validation part (e.g. ratios 0.6/0.2/0.2).' },
    );
  }
  assertDisjoint('query', queryIds);
  if (policy === 'connected-bank') {
    if (memoryIds === undefined) {
      throw new ConfigError(
        "The 'connected-bank' policy needs the memory ids of each split to check that no " +
          'memory is shared across splits.',
      );
    }
    assertDisjoint('memory', memoryIds);
  }
}

function assertDisjoint(kind: 'query' | 'memory', ids: SplitIds): void {
  const owner = new Map<string, (typeof SPLITS)[number]>();
  const clashes: string[] = [];
  let clashCount = 0;
  for (const name of SPLITS) {
    const list = ids[name];
    if (list === undefined) continue;
    for (const id of list) {
      const first = owner.get(id);
      if (first === undefined) owner.set(id, name);
      else if (first !== name) {
        clashCount += 1;
        if (clashes.length < 5) clashes.push(`'${id}' (${first} and ${name})`);
      }
    }
  }
  if (clashCount > 0) {
    const more = clashCount > clashes.length ? ` and ${clashCount - clashes.length} more` : '';
    throw new LabelLeakError(
      `${clashCount} ${kind} id(s) appear in two splits: ${clashes.join(', ')}${more}. ` +
        (kind === 'query'
          ? 'A query in two splits would let its labels reach training or selection twice.'
          : "Under the 'connected-bank' policy no memory may be shared across splits."),
      {
        suggestion:
          kind === 'query'
            ? 'Use the split file as made by the splitter; do not merge or edit splits.'
            : "Split with 'connected-bank' (components of the query–bank graph), or opt in to " +
              "'query-disjoint-shared-bank' explicitly (diagnostic only).",
      },
    );
  }
}
