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
    // One worker more than the cores (vitest's default is one fewer: on two cores, one worker):
    // many slow files wait on the `bfe` processes and servers they start (Milvus's time ticks and
    // session expiry, a killed writer's restart), and a third file keeps the cores busy then.
    maxWorkers: availableParallelism() + 1,
    // The files that take minutes start first (configs/vitest.sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
  },
});
