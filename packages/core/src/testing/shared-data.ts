import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * The verified, unpacked copies of the official benchmark files, prepared once per run by
     * `configs/vitest.data-setup.ts` (projects made with `realData: true`) when
     * `BFE_DATA_MIRROR` is set.
     */
    bfeDataDir?: string;
  }
}

/**
 * The directory holding verified, unpacked copies of the official benchmark files (by their
 * unpacked names, e.g. `longmemeval_s_cleaned.partial498.json`), or undefined when the run has
 * no `BFE_DATA_MIRROR` or the project does not prepare real data. Read it instead of unpacking
 * the mirror in a test: the global setup did that once for every test file and package.
 * @example
 * const dir = sharedDataDir();
 * describe.skipIf(dir === undefined)('LongMemEval S', () => { … join(dir!, name) … });
 */
export function sharedDataDir(): string | undefined {
  return inject('bfeDataDir');
}
