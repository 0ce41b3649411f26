import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './vitest.sequencer.ts';

/** Root config: every package, the runner and the cross-package tests as vitest projects. */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    projects: ['packages/*', 'apps/*', 'tests'],
    reporters: ['default'],
    // One worker per core, not vitest's default of one fewer: on two cores that default is one
    // worker, and most of the slow files wait on the `bfe` processes and servers they start.
    maxWorkers: availableParallelism(),
    // The files that take minutes start first (configs/vitest.sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
  },
});
