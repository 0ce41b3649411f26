// Compiles the adapter's WebAssembly kernel (assembly/kernel.ts, AssemblyScript) into
// src/kernels/wasm-bytes.ts; `--check` compares instead (tools/build-wasm.mjs).
import asc from 'assemblyscript/asc';
import { buildWasm } from '../../../tools/build-wasm.mjs';

await buildWasm({
  asc,
  version: '0.28.20',
  root: new URL('../', import.meta.url),
  entry: 'assembly/kernel.ts',
  target: 'src/kernels/wasm-bytes.ts',
  name: 'kernel',
});
