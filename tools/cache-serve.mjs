#!/usr/bin/env node
// `pnpm cache:serve`: the team cache for turbo tasks and bfe's artifact cache. Starts npm
// `turborepo-remote-cache` (pinned in the root package.json) on 127.0.0.1 with local-disk
// storage, then prints the three variables every client exports:
//
//   TURBO_API=http://127.0.0.1:3000 TURBO_TOKEN=… TURBO_TEAM=bfe
//
// Options: --port N (default $PORT or 3000; 0 picks a free port), --storage DIR (default
// $STORAGE_PATH or ~/.cache/bfe/team-cache; a shared disk works for a team on one host),
// --body-limit BYTES (the server's request limit, default its own 100 MiB), --host H (default
// 127.0.0.1). The token is $TURBO_TOKEN, or a random one printed once. Telemetry is off.
// SIGINT/SIGTERM stop the server; the script exits with it.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const args = process.argv.slice(2);
function option(name, fallback) {
  const i = args.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const value = args[i + 1];
  if (value === undefined) {
    console.error(`cache:serve: --${name} needs a value`);
    process.exit(2);
  }
  return value;
}

const port = option('port', process.env.PORT ?? '3000');
const host = option('host', '127.0.0.1');
const storage = resolve(
  option('storage', process.env.STORAGE_PATH ?? join(homedir(), '.cache', 'bfe', 'team-cache')),
);
const bodyLimit = option('body-limit', process.env.BODY_LIMIT ?? '');
const team = process.env.TURBO_TEAM ?? 'bfe';
const generated = process.env.TURBO_TOKEN === undefined || process.env.TURBO_TOKEN === '';
const token = generated ? randomBytes(24).toString('hex') : process.env.TURBO_TOKEN;
mkdirSync(storage, { recursive: true });

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('turborepo-remote-cache/package.json')), 'dist', 'cli.js');
const child = spawn(process.execPath, [cli], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    HOST: host,
    PORT: port,
    TURBO_TOKEN: token,
    STORAGE_PROVIDER: 'local',
    STORAGE_PATH: storage,
    STORAGE_PATH_USE_TMP_FOLDER: 'false',
    TURBO_TELEMETRY_DISABLED: '1',
    // Makes the server store and return turbo's x-artifact-tag (it verifies nothing with it;
    // the clients sign and verify with their own key).
    TURBO_REMOTE_CACHE_SIGNATURE_KEY: 'store-artifact-tags',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    ENABLE_STATUS_LOG: 'false',
    ...(bodyLimit === '' ? {} : { BODY_LIMIT: bodyLimit }),
  },
});

let announced = false;
let pending = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (text) => {
  pending += text;
  let nl;
  while ((nl = pending.indexOf('\n')) !== -1) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    const m = /Server listening at (http:\/\/[0-9.]+:\d+)/.exec(line);
    if (m !== null && !announced) {
      announced = true;
      console.log(`team cache on ${m[1]} (storage ${storage})`);
      if (generated) console.log('generated a token (set TURBO_TOKEN to choose one)');
      console.log(`export TURBO_API=${m[1]} TURBO_TEAM=${team} TURBO_TOKEN=${token}`);
      console.log('ready');
    } else if (process.env.BFE_CACHE_SERVE_LOG === '1') {
      process.stderr.write(`${line}\n`);
    }
  }
});

for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => child.kill(signal));
}
child.on('exit', (code, signal) => {
  if (!announced) console.error('cache:serve: the server stopped before it listened');
  process.exit(code ?? (signal === null ? 1 : 0));
});
