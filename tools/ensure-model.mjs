#!/usr/bin/env node
// Makes sure the encoder models the tests use are in the model cache (`bfe model fetch`; a
// cached, verified copy returns in about a second). Without them the model tests are skipped
// and counted as skipped; with BFE_REQUIRE_MODEL=1 (CI) a failed fetch fails the run instead.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.BFE_REQUIRE_MODEL === '1';
// multilingual-e5-small-q4: the second family's parity test (packages/encoder); a cold fetch
// downloads 91 MB and converts + exports in the same virtualenv (3–9 min here, once per cache).
for (const name of ['all-minilm-l6-v2', 'all-minilm-l6-v2-int8', 'multilingual-e5-small-q4']) {
  const r = spawnSync(
    process.execPath,
    [
      '--conditions=@bfe/source',
      '--import',
      'tsx',
      'apps/runner/src/bin.ts',
      'model',
      'fetch',
      name,
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) {
    if (required) process.exit(r.status ?? 1);
    console.log(
      `note: could not fetch ${name}; the tests that need it are skipped (and counted as skipped).`,
    );
  }
}
