#!/usr/bin/env node
// The `bfe` executable (`node_modules/.bin/bfe`, `npx bfe`): the CLI from this workspace's
// TypeScript sources in this one process — no pnpm and no child process in between, so a
// supervisor's SIGTERM reaches the CLI itself (and `bfe serve` forwards it to the server).
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

register('./source-condition.mjs', import.meta.url);
registerTsx();
const { main } = await import('../src/cli/program.ts');
process.exitCode = await main(process.argv);
