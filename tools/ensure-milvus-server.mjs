#!/usr/bin/env node
// Makes sure the virtualenv of the real Milvus standalone server (PyPI milvus==2.3.5: the Go/C++
// binary, embedded etcd, RocksMQ, local storage) exists, created once per machine beside the
// model cache and reused (a 58 MB wheel; under a minute the first time). The tests start the
// server themselves (startMilvusServer: free 127.0.0.1 ports, authorization on) and stop it.
// Without the venv those tests are skipped and counted as skipped; with BFE_REQUIRE_MILVUS=1
// (CI) a failure fails the run.
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
    "const { ensureMilvusServer } = await import('./packages/index-milvus/src/testing/server.ts');" +
      "console.log('milvus-server: ' + (await ensureMilvusServer()));",
  ],
  { cwd: root, stdio: 'inherit' },
);
if (r.status !== 0) {
  if (required) process.exit(r.status ?? 1);
  console.log('note: no Milvus server virtualenv; its tests are skipped (and counted as skipped).');
}
