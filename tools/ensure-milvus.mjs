#!/usr/bin/env node
// Makes sure the two Milvus virtualenvs the Milvus tests use exist, each created once per machine
// beside the model cache and reused: Milvus Lite (PyPI milvus-lite; about a minute the first
// time) and the real Milvus standalone server (PyPI milvus==2.3.5: the Go/C++ binary, embedded
// etcd, RocksMQ, local storage; a 58 MB wheel). The tests start the server themselves
// (startMilvusServer: free 127.0.0.1 ports, authorization on) and stop it. Without a venv its
// tests are skipped and counted as skipped; with BFE_REQUIRE_MILVUS=1 (CI) a failure fails the run.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const required = process.env.BFE_REQUIRE_MILVUS === '1';
const kinds = [
  { name: 'milvus-lite', module: 'lite.ts', ensure: 'ensureMilvusLite', what: 'Milvus Lite' },
  {
    name: 'milvus-server',
    module: 'server.ts',
    ensure: 'ensureMilvusServer',
    what: 'Milvus server',
  },
];
for (const { name, module, ensure, what } of kinds) {
  const r = spawnSync(
    process.execPath,
    [
      '--conditions=@bfe/source',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const { ${ensure} } = await import('./packages/index-milvus/src/testing/${module}');` +
        `console.log('${name}: ' + (await ${ensure}()));`,
    ],
    { cwd: root, stdio: 'inherit' },
  );
  if (r.status !== 0) {
    if (required) process.exit(r.status ?? 1);
    console.log(`note: no ${what} virtualenv; its tests are skipped (and counted as skipped).`);
  }
}
