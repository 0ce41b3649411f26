import { terminalTableLines, type Split } from '@bfe/core';

/**
 * The folds of a cross-fitted split as a table: per fold, the units and queries it tests and
 * validates on (units: conversations/articles under connected-bank, queries under the shared
 * bank), and the training share.
 *
 * @example
 * renderFolds(makeFoldSplits(benchmark, { folds: 5, seed: 42 }));
 */
export function renderFolds(folds: readonly Split[]): string {
  const first = folds[0];
  if (first === undefined) return 'no folds';
  const units = (s: Split, part: 'test' | 'validation'): string => {
    const ids = s.unit === 'component' ? s.banks[part] : s.queries[part];
    return ids.length <= 4 ? ids.join(', ') : `${ids.slice(0, 3).join(', ')}, … (${ids.length})`;
  };
  const rows = folds.map((s) => [
    String(s.crossFit?.fold ?? '?'),
    units(s, 'test'),
    String(s.queries.test.length),
    units(s, 'validation'),
    String(s.queries.validation.length),
    `${s.unitCounts.train} units, ${s.queries.train.length} queries`,
  ]);
  return [
    `cross-fitted ${first.policy} split of '${first.dataset}': ${folds.length} folds, seed ${first.seed}` +
      `${first.diagnosticOnly ? ' (diagnostic only: shared bank)' : ''}`,
    `rule: ${first.crossFit?.rule ?? '?'}`,
    ...terminalTableLines({
      head: ['fold', 'test units', 'test q', 'validation units', 'validation q', 'train'],
      rows,
    }),
  ].join('\n');
}
