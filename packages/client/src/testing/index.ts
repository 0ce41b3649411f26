export { FIXTURE_MEMORIES, openFixtureStore } from './fixture.js';
export { startStubServer } from './stub-server.js';
export type { StubServer, StubServerOptions } from './stub-server.js';
