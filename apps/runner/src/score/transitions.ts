import { ConfigError, terminalTableLines } from '@bfe/core';
import { transitionsBetween } from '@bfe/eval';
import type { Evaluation, Transitions } from '@bfe/eval';
import { transitionsTable } from '../report/transitions.js';

/**
 * Checks that every pair of `--transitions` names systems of the run.
 *
 * @throws ConfigError naming the missing system and the run's systems.
 * @example
 * checkTransitionPairs(['pooled', 'sparse-fusion'], [['pooled', 'adapted']]); // throws: no 'adapted'
 */
export function checkTransitionPairs(
  systems: readonly string[],
  pairs: ReadonlyArray<readonly [string, string]>,
): void {
  for (const name of pairs.flat()) {
    if (!systems.includes(name)) {
      throw new ConfigError(`--transitions names '${name}', which is not a system of this run.`, {
        suggestion: `Systems: ${systems.join(', ')}.`,
      });
    }
  }
}

/**
 * The query-level transitions (hit = a relevant memory in the top 10) of each requested pair,
 * computed from the systems' evaluations.
 *
 * @throws ConfigError when a pair names a system the run lacks.
 * @example
 * requestedTransitions(run.systems, [['pooled', 'sparse-fusion']])[0].overall.net; // 249
 */
export function requestedTransitions(
  systems: ReadonlyArray<{ readonly name: string; readonly evaluation: Evaluation }>,
  pairs: ReadonlyArray<readonly [string, string]>,
): Transitions[] {
  checkTransitionPairs(
    systems.map((s) => s.name),
    pairs,
  );
  return transitionsBetween(new Map(systems.map((s) => [s.name, s.evaluation])), pairs);
}

/**
 * The terminal tables `bfe score` and `bfe eval` print for `--transitions`: per pair, a row per
 * subtask and an `all` row with recoveries, reverse transitions, net, both hit and both miss.
 *
 * @example
 * renderTransitions(list);
 * // ['', 'pooled → sparse-fusion: queries with a relevant memory in the top 10 …',
 * //  'subtask    queries  recoveries  reverse  net  both hit  both miss', …]
 */
export function renderTransitions(list: readonly Transitions[]): string[] {
  return list.flatMap((t) => {
    const table = transitionsTable(t);
    return ['', table.title, ...terminalTableLines(table)];
  });
}
