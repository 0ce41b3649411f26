#!/usr/bin/env node
// Makes sure the Milvus Lite virtualenv the Milvus tests use exists (created once per machine
// beside the model cache, then reused; about a minute the first time). Without it those tests
// are skipped and counted as skipped; with BFE_REQUIRE_MILVUS=1 (CI) a failure fails the run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.BFE_REQUIRE_MILVUS === '1';
const r = spawnSync(
  process.execPath,
  [
    '--conditions=@bfe/source',
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    "const { ensureMilvusLite } = await import('./packages/index-milvus/src/testing/lite.ts');" +
      "console.log('milvus-lite: ' + (await ensureMilvusLite()));",
  ],
  { cwd: root, stdio: 'inherit' },
);
if (r.status !== 0) {
  if (required) process.exit(r.status ?? 1);
  console.log(
    'note: no Milvus Lite virtualenv; the Milvus tests are skipped (and counted as skipped).',
  );
}
