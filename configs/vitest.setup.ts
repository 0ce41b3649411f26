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

// A developer's or CI's team cache (TURBO_API/TURBO_TOKEN/TURBO_TEAM) must not reach the bfe
// processes tests start: they would upload test artifacts to it. Tests of the team cache start
// their own server and pass its variables explicitly.
for (const name of ['TURBO_API', 'TURBO_TOKEN', 'TURBO_TEAM', 'TURBO_TEAMID']) {
  delete process.env[name];
}
