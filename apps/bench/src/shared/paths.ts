import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

/** The repository root (`apps/bench/src/shared` → four levels up). */
export const repoRoot = resolve(here, '../../../..');

/** The Python peers of the benchmarks: `apps/bench/python`. */
export const pythonDir = resolve(here, '../../python');
