// Compiles the index's WebAssembly kernels (AssemblyScript): the clustered index's fast scan
// (assembly/ivf-scan.ts → src/ivf/wasm-bytes.ts) and the float64 inner products
// (assembly/dots.ts → src/dots-wasm-bytes.ts); `--check` compares instead (tools/build-wasm.mjs).
import asc from 'assemblyscript/asc';
import { buildWasm } from '../../../tools/build-wasm.mjs';

const root = new URL('../', import.meta.url);
await buildWasm({
  asc,
  version: '0.28.20',
  root,
  entry: 'assembly/ivf-scan.ts',
  target: 'src/ivf/wasm-bytes.ts',
  name: 'fast scan',
  // Its memory is shared: a search's scan threads read the same codes (src/ivf/scan-pool.ts).
  extraFlags: ['--enable', 'threads', '--sharedMemory'],
});
await buildWasm({
  asc,
  version: '0.28.20',
  root,
  entry: 'assembly/ivf-scan.ts',
  target: 'src/ivf/wasm-bytes-relaxed.ts',
  name: 'fast scan (relaxed SIMD)',
  extraFlags: ['--enable', 'threads', '--enable', 'relaxed-simd', '--sharedMemory'],
});
await buildWasm({
  asc,
  version: '0.28.20',
  root,
  entry: 'assembly/dots.ts',
  target: 'src/dots-wasm-bytes.ts',
  name: 'inner-product kernel',
});
