import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineProject } from 'vitest/config';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * The mirror of the official benchmark files, or undefined. Tests run with the package folder
 * as working directory (turbo) or the repository root (`npm test`), so a relative
 * `BFE_DATA_MIRROR` is taken relative to the repository root, as the README writes it
 * (`BFE_DATA_MIRROR=../shared/data`).
 */
export function testDataMirror(): string | undefined {
  const mirror = process.env.BFE_DATA_MIRROR;
  if (mirror === undefined || mirror === '') return undefined;
  return isAbsolute(mirror) ? mirror : resolve(repoRoot, mirror);
}

function testEnv(): Record<string, string> {
  const mirror = testDataMirror();
  return mirror === undefined ? {} : { BFE_DATA_MIRROR: mirror };
}

/**
 * Settings every vitest project shares: resolve workspace packages to their TypeScript
 * source (the `@bfe/source` export condition), so tests never need a prior build.
 */
export const sourceConditions = {
  resolve: { conditions: ['@bfe/source', ...defaultClientConditions] },
  ssr: { resolve: { conditions: ['@bfe/source', ...defaultServerConditions] } },
  // Vitest loads global setup files through its own server environment, which does not take
  // the conditions above.
  environments: {
    __vitest__: { resolve: { conditions: ['@bfe/source', ...defaultServerConditions] } },
  },
};

export const setupFile = fileURLToPath(new URL('./vitest.setup.ts', import.meta.url));
const dataSetupFile = fileURLToPath(new URL('./vitest.data-setup.ts', import.meta.url));

/** What a package's tests need beyond the defaults. */
export interface ProjectOptions {
  /**
   * The project reads the real benchmark files: their verified, unpacked copies are prepared
   * once, before any test, by a global setup shared with every other such project.
   */
  readonly realData?: boolean;
  /**
   * Run each test file in a fresh module graph. Off by default: a worker then imports a
   * package's modules once for all the files it runs, and the unit suites spend most of their
   * time importing. The end-to-end project keeps it on.
   */
  readonly isolate?: boolean;
  /** More global setup files of the project (absolute paths), after the real-data one. */
  readonly globalSetup?: readonly string[];
}

/**
 * A project config for one package folder; `name` is the vitest project name.
 *
 * Timeouts are for a loaded machine: turbo runs every package's tests beside the type checks
 * and lints, and the suite must pass on two busy cores. They still end a hang within minutes;
 * heavy fixtures are prepared once in global setup, outside them.
 */
export function packageProject(name: string, options: ProjectOptions = {}) {
  return defineProject({
    ...sourceConditions,
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts', '*.test.ts'],
      environment: 'node',
      env: testEnv(),
      restoreMocks: true,
      unstubEnvs: true,
      unstubGlobals: true,
      isolate: options.isolate ?? false,
      setupFiles: [setupFile],
      globalSetup: [
        ...(options.realData === true ? [dataSetupFile] : []),
        ...(options.globalSetup ?? []),
      ],
      testTimeout: 120_000,
      hookTimeout: 180_000,
    },
  });
}
