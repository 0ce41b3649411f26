// Compiles the clustered index's fast scan (assembly/ivf-scan.ts, AssemblyScript) into
// src/ivf/wasm-bytes.ts; `--check` compares instead (tools/build-wasm.mjs).
import asc from 'assemblyscript/asc';
import { buildWasm } from '../../../tools/build-wasm.mjs';

await buildWasm({
  asc,
  version: '0.28.20',
  root: new URL('../', import.meta.url),
  entry: 'assembly/ivf-scan.ts',
  target: 'src/ivf/wasm-bytes.ts',
  name: 'fast scan',
  // Its memory is shared: a search's scan threads read the same codes (src/ivf/scan-pool.ts).
  extraFlags: ['--enable', 'threads', '--sharedMemory'],
});
