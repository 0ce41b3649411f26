#!/usr/bin/env node
// `pnpm turbo …` (and the build, typecheck, lint and check scripts): turbo with a preflight of
// the team cache. Turbo reads TURBO_API, TURBO_TOKEN and TURBO_TEAM itself, but a wrong token
// only shows as cache misses (its 401s are silent); so when TURBO_API is set this asks the
// server first, with the same token and team, and stops with exit 2 and a plain message when
// the server refuses them or cannot be reached. Without TURBO_API it runs turbo unchanged.
// Telemetry is off unless TURBO_TELEMETRY_DISABLED is set otherwise.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const env = {
  ...process.env,
  TURBO_TELEMETRY_DISABLED: process.env.TURBO_TELEMETRY_DISABLED ?? '1',
};

function fail(message) {
  console.error(`turbo remote cache: ${message}`);
  console.error(
    '  Check TURBO_TOKEN and TURBO_TEAM against the server (`pnpm cache:serve` prints them), or unset TURBO_API to use the local cache only.',
  );
  process.exit(2);
}

/** HEAD of an id no artifact has: 404 (or 200) means the token and team are accepted. */
async function preflight() {
  const api = env.TURBO_API?.trim();
  if (api === undefined || api === '') return;
  const token = env.TURBO_TOKEN?.trim() ?? '';
  const team = (env.TURBO_TEAM ?? env.TURBO_TEAMID)?.trim() ?? '';
  if (token === '') fail(`TURBO_API is ${api} but TURBO_TOKEN is unset.`);
  if (team === '') fail(`TURBO_API is ${api} but TURBO_TEAM is unset.`);
  const url = `${api.replace(/\/+$/, '')}/v8/artifacts/0000000000000000?slug=${encodeURIComponent(team)}`;
  let res;
  try {
    res = await globalThis.fetch(url, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${token}` },
    });
  } catch (error) {
    fail(`${api} cannot be reached (${error?.cause ?? error}).`);
  }
  if (res.status === 400 || res.status === 401 || res.status === 403) {
    fail(`${api} refused team '${team}' with this TURBO_TOKEN (HTTP ${res.status}).`);
  }
  if (!res.ok && res.status !== 404) fail(`${api} answered HTTP ${res.status}.`);
  // turbo.json has remoteCache.signature: turbo signs what it uploads and refuses a download
  // whose HMAC tag does not verify, so the server's storage cannot plant task outputs (a
  // results.json). The key defaults to the token, as bfe's own remote tier does.
  if ((env.TURBO_REMOTE_CACHE_SIGNATURE_KEY ?? '') === '')
    env.TURBO_REMOTE_CACHE_SIGNATURE_KEY = token;
}

await preflight();
const require = createRequire(import.meta.url);
const turbo = join(dirname(require.resolve('turbo/package.json')), 'bin', 'turbo');
const child = spawn(turbo, process.argv.slice(2), { stdio: 'inherit', env });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 130)));
