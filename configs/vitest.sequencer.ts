import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files that take minutes on two cores, longest first (seconds measured on CI's two
 * cores: test-results/vitest.json). Each worker takes the next file when it finishes one, so
 * these start first — the two longest side by side at once, the rest as workers free up —
 * and the many short files fill in behind them, instead of a long file starting last (or two
 * of them ending up one after the other on one worker) and stretching the run.
 */
export const SLOW_FILES: readonly string[] = [
  'tests/store-locomo-equality.test.ts',
  'tests/run-faults.test.ts',
  'packages/index-milvus/src/milvus-server.integration.test.ts',
  'packages/store/src/crash.integration.test.ts',
  'packages/store/src/index/milvus-server.integration.test.ts',
  'tests/data-real.test.ts',
  'tests/run-cache.test.ts',
  'tests/run-bad-input.test.ts',
  'tests/team-cache.test.ts',
  'tests/score.test.ts',
  'apps/server/src/built.integration.test.ts',
];

/** Vitest's order (projects by name, then by its cache of durations), {@link SLOW_FILES} first. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (f: TestSpecification): number => {
      const at = SLOW_FILES.indexOf(relative(root, f.moduleId).split('\\').join('/'));
      return at === -1 ? SLOW_FILES.length : at;
    };
    // Array.prototype.sort is stable: files outside the list keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
