#!/usr/bin/env node
// Runs the real Milvus 2.3.5 standalone server (the tests' startMilvusServer: PyPI milvus in the
// cached venv, authorization on, token root:Milvus) on 127.0.0.1:PORT with its data in DIR, until
// Ctrl-C or SIGTERM; for experiments and benchmarks that name a fixed address.
// Usage: node tools/milvus-server.mjs --data DIR [--port 19530]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i === -1 ? fallback : args[i + 1];
};
const data = option('--data');
if (data === undefined) {
  console.error('usage: node tools/milvus-server.mjs --data DIR [--port 19530]');
  process.exit(2);
}
const port = Number(option('--port', '19530'));
const root = fileURLToPath(new URL('..', import.meta.url));
const child = spawn(
  process.execPath,
  [
    '--conditions=@bfe/source',
    '--import',
    'tsx',
    '--input-type=module',
    '-e',
    "const { startMilvusServer } = await import('./packages/index-milvus/src/testing/server.ts');" +
      `const s = await startMilvusServer({ dataDir: ${JSON.stringify(data)}, port: ${port} });` +
      "console.log('milvus-server: ' + s.address + ' (token ' + s.token + ')');" +
      'const stop = async () => { await s.stop(); process.exit(0); };' +
      "process.on('SIGINT', stop); process.on('SIGTERM', stop);",
  ],
  { cwd: root, stdio: 'inherit' },
);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code) => process.exit(code ?? 1));
