// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** One flat config for every package; packages run `eslint -c ../../configs/eslint.config.js`. */
export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/.turbo/**', '**/fixtures/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.mts'],
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // Tests and repository scripts may print diagnostics (the CLI opts out in its own config).
    files: ['**/*.test.ts', '**/tools/**', '**/*.mjs'],
    rules: { 'no-console': 'off' },
  },
  {
    // The CLI prints: library code reports through return values (apps/runner's `lint` runs
    // from the repository root, so this pattern holds there too).
    files: ['**/apps/runner/src/**/*.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
);
