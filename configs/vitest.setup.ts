import { afterEach, beforeEach, vi } from 'vitest';

// Fail a test that writes to console.error unexpectedly: errors must surface as thrown
// errors or collected reports, never as stray output (zod's fail-on-console pattern).
let errors: unknown[][] = [];
beforeEach(() => {
  errors = [];
  vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    errors.push(args);
  });
});
afterEach(() => {
  if (errors.length > 0) {
    const first = errors[0]?.map(String).join(' ') ?? '';
    throw new Error(`Unexpected console.error (${errors.length} call(s)): ${first}`);
  }
});
