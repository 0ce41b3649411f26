import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseExperiment, type Experiment } from '../config.js';
import { runExperiment, type RunOutcome } from '../run-experiment.js';

// The tiny encoder fixture has one home, `@bfe/encoder/testing`; re-exported for the runner's tests.
export { installTinyModel, writeTinyModelSource } from '@bfe/encoder/testing';

/** The repository root, for the fixtures the runner's integration tests read. */
export const repoRoot = fileURLToPath(new URL('../../../../../', import.meta.url));

/** The LMEB document-layout fixture (a tiny task) of `@bfe/datasets`. */
export const documentTask = join(repoRoot, 'packages/datasets/fixtures/lmeb-document');

/**
 * The in-process tests' default experiment: the LMEB document fixture, no split, the tiny
 * model at `modelDir`, k 4 with a sweep of 2 and 4, 50 resamples; `raw` overrides sections.
 */
export function tinyExperiment(modelDir: string, raw: Record<string, unknown> = {}): Experiment {
  return parseExperiment({
    name: 'tiny',
    dataset: { name: `lmeb:${documentTask}` },
    split: { policy: 'none' },
    model: { name: 'tiny', dir: modelDir },
    scorer: { k: 4, kSweep: [2, 4] },
    eval: { resamples: 50 },
    ...raw,
  });
}

/** Runs `e` in process with its cache and run folders under `dir`. */
export function runIn(
  dir: string,
  e: Experiment,
  log?: (line: string) => void,
): Promise<RunOutcome> {
  return runExperiment({
    experiment: e,
    configPath: join(dir, 'experiment.yaml'),
    argv: ['run', 'experiment.yaml'],
    cacheDir: join(dir, 'cache'),
    runsDir: join(dir, 'runs'),
    ...(log === undefined ? {} : { log }),
  });
}
