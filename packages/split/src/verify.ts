import { benchmarkHash, splitNameSchema, splitSchema } from '@bfe/core';
import type { Benchmark, Split, SplitName } from '@bfe/core';
import { z } from 'zod';
import { SplitInvalidError } from './errors.js';
import { buildQueryBankGraph } from './graph.js';
import { SHARED_BANK_POLICY, splitContentHash } from './make-split.js';

const SPLIT_NAMES: readonly SplitName[] = splitNameSchema.options;

// At most this many violations are quoted in the error message; the count is exact.
const QUOTED_VIOLATIONS = 8;

/**
 * Re-checks every invariant of a split against the benchmark it claims to come from, and
 * throws one {@link SplitInvalidError} listing the violations (count exact, first few quoted):
 *
 * - the split matches `splitSchema`, its `hash` matches its content, and its `dataset` and
 *   `benchmarkHash` match the benchmark;
 * - every query list is sorted without repeats, every split is non-empty, no query is in two
 *   splits, every query of the benchmark is assigned exactly once, and no unknown query appears;
 * - each split's `banks` are exactly the banks its queries link to, and `unitCounts` match the
 *   components (strict) or queries (shared bank) of each split;
 * - under `connected-bank`: no bank — hence no memory — is reachable from two splits, and the
 *   flags say `diagnosticOnly: false, promotionEligible: true, marks: []`;
 * - under `query-disjoint-shared-bank`: `diagnosticOnly: true, promotionEligible: false` and the
 *   `shared-unlabelled-memory` mark, so a shared bank can never pass as a strict result.
 *
 * @throws SplitInvalidError (a `SplitError`, code `SPLIT_INVALID`) on any violation.
 * @throws DataError when the benchmark itself has repeated ids or dangling candidates.
 * @example
 * const split = makeSplit(benchmark, { seed: 42, ratios: [0.6, 0.2, 0.2] });
 * verifySplit(split, benchmark); // returns undefined
 * verifySplit({ ...split, seed: 43 }, benchmark); // throws: hash does not match
 */
export function verifySplit(split: Split, benchmark: Benchmark): void {
  const parsed = splitSchema.safeParse(split);
  if (!parsed.success) {
    throw new SplitInvalidError(
      `Split of '${String((split as { dataset?: unknown }).dataset)}' does not match the split ` +
        `schema:\n${z.prettifyError(parsed.error)}`,
    );
  }
  const violations: string[] = [];
  const { hash, ...body } = split;
  const strict = split.policy === 'connected-bank';

  if (splitContentHash(body) !== hash) {
    violations.push(`hash ${hash} does not match the split's content (edited or corrupt)`);
  }
  if (split.dataset !== benchmark.name) {
    violations.push(`made from dataset '${split.dataset}', not '${benchmark.name}'`);
  }
  if (split.benchmarkHash !== benchmarkHash(benchmark)) {
    violations.push(`benchmarkHash ${split.benchmarkHash} is not the hash of this benchmark`);
  }
  checkFlags(split, violations);

  const graph = buildQueryBankGraph(benchmark);
  const componentOf = new Map<string, number>();
  graph.components.forEach((c, k) => {
    for (const q of c.queryIds) componentOf.set(q, k);
  });

  const assigned = new Map<string, SplitName>();
  const bankOwner = new Map<number, SplitName>();
  for (const name of SPLIT_NAMES) {
    const ids = split.queries[name];
    if (ids.length === 0) violations.push(`${name} has no queries`);
    const reached = new Set<number>();
    const units = new Set<number>();
    let sorted = true;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as string;
      if (sorted && i > 0 && !((ids[i - 1] as string) < id)) {
        // One line per list: a reversed list is one mistake, not n − 1.
        violations.push(`${name} query list is not sorted without repeats at '${id}'`);
        sorted = false;
      }
      const banks = graph.queryBanks.get(id);
      if (banks === undefined) {
        violations.push(`${name} holds query '${id}', which is not in the benchmark`);
        continue;
      }
      const previous = assigned.get(id);
      if (previous !== undefined && previous !== name) {
        violations.push(`query '${id}' is in both ${previous} and ${name}`);
      }
      assigned.set(id, name);
      for (const b of banks) reached.add(b);
      units.add(componentOf.get(id) as number);
    }

    const expectedUnits = strict ? units.size : ids.length;
    if (split.unitCounts[name] !== expectedUnits) {
      violations.push(
        `unitCounts.${name} is ${split.unitCounts[name]}, but its queries form ${expectedUnits} ` +
          `${strict ? 'component(s)' : 'quer(ies)'}`,
      );
    }
    const reachedIds = [...reached].map((b) => graph.bankIds[b] as string).sort();
    if (!sameList(reachedIds, split.banks[name])) {
      violations.push(
        `banks.${name} (${split.banks[name].length} bank(s)) is not the sorted list of the ` +
          `${reachedIds.length} bank(s) its queries link to`,
      );
    }
    if (strict) {
      for (const b of reached) {
        const owner = bankOwner.get(b);
        if (owner !== undefined && owner !== name) {
          violations.push(
            `bank '${graph.bankIds[b]}' (${graph.bankMemoryCounts[b]} memories) is reachable ` +
              `from both ${owner} and ${name}`,
          );
        }
        bankOwner.set(b, name);
      }
    }
  }
  let missing = 0;
  for (const id of graph.queryBanks.keys()) {
    if (!assigned.has(id)) {
      missing += 1;
      if (missing <= QUOTED_VIOLATIONS) violations.push(`query '${id}' is in no split`);
    }
  }
  if (missing > QUOTED_VIOLATIONS) {
    violations.push(`… ${missing - QUOTED_VIOLATIONS} more queries are in no split`);
  }

  if (violations.length > 0) {
    const shown = violations.slice(0, QUOTED_VIOLATIONS).map((v) => `  - ${v}`);
    if (violations.length > QUOTED_VIOLATIONS) {
      shown.push(`  - … ${violations.length - QUOTED_VIOLATIONS} more`);
    }
    throw new SplitInvalidError(
      `Split ${hash.slice(0, 12)} (${split.policy}, seed ${split.seed}) of '${split.dataset}' ` +
        `breaks ${violations.length} invariant(s):\n${shown.join('\n')}`,
      { suggestion: 'Do not use this split; make it again from the benchmark with makeSplit.' },
    );
  }
}

/**
 * Options of {@link assertNoLeak}.
 *
 * @example
 * assertNoLeak(split, benchmark, { allowSharedBank: true } satisfies AssertNoLeakOptions);
 */
export interface AssertNoLeakOptions {
  /**
   * Accept a `query-disjoint-shared-bank` split (its flags are still checked). Only for
   * diagnostic runs whose results are marked and never promoted.
   */
  readonly allowSharedBank?: boolean;
}

/**
 * The guard a trainer or evaluator calls before using a split: {@link verifySplit}, and then
 * a refusal of any split whose memory bank is shared across splits unless the caller opts in
 * with `allowSharedBank`, so a shared bank cannot slip into a strict run.
 *
 * @throws SplitInvalidError when the split is invalid, or shares its bank without opt-in.
 * @example
 * assertNoLeak(split, benchmark); // ok for a connected-bank split
 * assertNoLeak(sharedSplit, benchmark); // throws: shared bank
 * assertNoLeak(sharedSplit, benchmark, { allowSharedBank: true }); // ok, diagnostic only
 */
export function assertNoLeak(
  split: Split,
  benchmark: Benchmark,
  options: AssertNoLeakOptions = {},
): void {
  verifySplit(split, benchmark);
  if (split.policy !== 'connected-bank' && options.allowSharedBank !== true) {
    throw new SplitInvalidError(
      `Split ${split.hash.slice(0, 12)} of '${split.dataset}' uses policy '${split.policy}': ` +
        `its train, validation and test queries share one memory bank, so it cannot back a ` +
        `strict (promotion-eligible) run.`,
      {
        suggestion:
          `Make a 'connected-bank' split, or pass allowSharedBank: true for a diagnostic run ` +
          `whose results stay marked shared-unlabelled-memory.`,
      },
    );
  }
}

function checkFlags(split: Split, violations: string[]): void {
  const strict = split.policy === 'connected-bank';
  const shared = split.marks.includes('shared-unlabelled-memory');
  if (split.unit !== (strict ? 'component' : 'query')) {
    violations.push(`unit '${split.unit}' does not belong to policy '${split.policy}'`);
  }
  if (strict && (split.diagnosticOnly || !split.promotionEligible || shared)) {
    violations.push(
      `a connected-bank split must be diagnosticOnly: false, promotionEligible: true, marks: []`,
    );
  }
  if (
    split.policy === SHARED_BANK_POLICY &&
    (!split.diagnosticOnly || split.promotionEligible || !shared)
  ) {
    violations.push(
      `a ${SHARED_BANK_POLICY} split must be diagnosticOnly: true, promotionEligible: false ` +
        `and marked shared-unlabelled-memory`,
    );
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
