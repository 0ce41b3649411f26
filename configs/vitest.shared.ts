import { defaultClientConditions, defaultServerConditions } from 'vite';
import { defineProject } from 'vitest/config';
import { fileURLToPath } from 'node:url';

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
      restoreMocks: true,
      setupFiles: [setupFile],
      testTimeout: 60_000,
      hookTimeout: 60_000,
    },
  });
}
