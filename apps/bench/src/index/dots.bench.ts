/**
 * `pnpm bench:dots`: the float64 inner products (`dotsInto`, the rescoring and evidence kernel)
 * on their two paths, measured in the same run: the WebAssembly SIMD kernel against the
 * JavaScript loop, 128 rows a call of one 384-d query row, over banks of 22k (a LoCoMo
 * conversation), 200k and 2M random unit-scale rows, the rows asked either as one run of
 * consecutive tokens (a memory's tokens, a chunk) or at random (an index's proposals). Calls
 * alternate between the paths; best of `--reps` passes. Prints ns per row, the ratio, and the
 * path `dotsInto` takes for each shape.
 *
 * @example
 * pnpm bench:dots --markdown
 */
import { dotsIntoJs, dotsIntoWasm, runsOf } from '@bfe/index/dots';
import { benchCommand, flag, intList, parseCommand, positive } from '../shared/cli.js';
import { note, printJson, printTable } from '../shared/table.js';

const command = benchCommand('bench:dots', 'float64 inner products: WebAssembly against JavaScript')
  .addOption(flag('--banks <list>', 'bank sizes in tokens', intList, '22000,200000,2000000'))
  .addOption(flag('--calls <n>', 'calls per pass and path', positive, '2000'))
  .addOption(flag('--reps <n>', 'passes; the best is kept', positive, '3'))
  .option('--markdown', 'print the table as Markdown');
const { options } = parseCommand<{
  banks: number[];
  calls: number;
  reps: number;
  markdown?: boolean;
}>(command);

const DIM = 384;
const ROWS = 128;

// A fixed generator: the same values every run.
let seed = 12345;
const next = (): number => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return seed / 2 ** 32 - 0.5;
};

const rows: string[][] = [];
const json: object[] = [];
for (const size of options.banks) {
  note(`bank of ${size} rows`);
  const bank = Float32Array.from({ length: size * DIM }, next);
  const queries = Float32Array.from({ length: 32 * DIM }, next);
  const out = new Float64Array(ROWS);
  const offsets = new Int32Array(ROWS);
  for (const shape of ['run', 'random']) {
    let best = { js: Infinity, wasm: Infinity };
    for (let rep = 0; rep < options.reps; rep++) {
      const took = { js: 0, wasm: 0 };
      for (let c = 0; c < options.calls; c++) {
        const start = Math.floor((next() + 0.5) * (size - ROWS));
        for (let h = 0; h < ROWS; h++) {
          const row = shape === 'run' ? start + h : Math.floor((next() + 0.5) * size);
          offsets[h] = row * DIM;
        }
        const at = (c % 32) * DIM;
        // Alternating which path goes first, so neither always finds the rows in cache.
        const order = c % 2 === 0 ? (['js', 'wasm'] as const) : (['wasm', 'js'] as const);
        for (const path of order) {
          const dots = path === 'js' ? dotsIntoJs : dotsIntoWasm;
          const t0 = performance.now();
          dots(bank, offsets, ROWS, queries, at, out, DIM);
          took[path] += performance.now() - t0;
        }
      }
      best = { js: Math.min(best.js, took.js), wasm: Math.min(best.wasm, took.wasm) };
    }
    // The path `dotsInto` takes for the last call's rows.
    const chosen = runsOf(offsets, ROWS, DIM) ? 'WebAssembly' : 'JavaScript';
    const ns = (ms: number): number => (ms * 1e6) / (options.calls * ROWS);
    rows.push([
      String(size),
      shape,
      ns(best.js).toFixed(0),
      ns(best.wasm).toFixed(0),
      (best.js / best.wasm).toFixed(2),
      chosen,
    ]);
    json.push({ size, shape, jsNsPerRow: ns(best.js), wasmNsPerRow: ns(best.wasm), chosen });
  }
}
printTable(
  {
    head: ['bank rows', 'rows asked', 'JavaScript ns/row', 'WebAssembly ns/row', '×', 'dotsInto'],
    rows,
  },
  { markdown: options.markdown },
);
printJson({ dim: DIM, rowsPerCall: ROWS, results: json });
