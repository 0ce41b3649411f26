import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineProject } from 'vitest/config';
import { isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));

/**
 * Tests run with the package folder as working directory (turbo) or the repository root
 * (`npm test`), so a relative `BFE_DATA_MIRROR` is taken relative to the repository root, as
 * the README writes it (`BFE_DATA_MIRROR=../shared/data`).
 */
function testEnv(): Record<string, string> {
  const mirror = process.env.BFE_DATA_MIRROR;
  if (mirror === undefined || mirror === '') return {};
  return { BFE_DATA_MIRROR: isAbsolute(mirror) ? mirror : resolve(repoRoot, mirror) };
}

/**
 * Settings every vitest project shares: resolve workspace packages to their TypeScript
 * source (the `@bfe/source` export condition), so tests never need a prior build.
 */
export const sourceConditions = {
  resolve: { conditions: ['@bfe/source', ...defaultClientConditions] },
  ssr: { resolve: { conditions: ['@bfe/source', ...defaultServerConditions] } },
};

export const setupFile = fileURLToPath(new URL('./vitest.setup.ts', import.meta.url));

/** A project config for one package folder; `name` is the vitest project name. */
export function packageProject(name: string) {
  return defineProject({
    ...sourceConditions,
    test: {
      name,
      include: ['src/**/*.test.ts', 'test/**/*.test.ts', '*.test.ts'],
      environment: 'node',
      env: testEnv(),
      restoreMocks: true,
      setupFiles: [setupFile],
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  });
}
