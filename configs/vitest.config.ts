import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/** Root config: every package, the runner and the cross-package tests as vitest projects. */
export default defineConfig({
  root: fileURLToPath(new URL('..', import.meta.url)),
  test: {
    projects: ['packages/*', 'apps/*', 'tests'],
    reporters: ['default'],
  },
});
