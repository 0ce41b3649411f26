/**
 * `pnpm bench:dots`: the float64 inner products (`dotsInto`, the rescoring and evidence kernel)
 * on their two paths, measured in the same run: the WebAssembly SIMD kernel against the
 * JavaScript loop, 128 rows a call of one 384-d query row, over banks of 22k (a LoCoMo
 * conversation), 200k and 2M random unit-scale rows, the rows asked either as one run of
 * consecutive tokens (a memory's tokens, a chunk) or at random (an index's proposals). Calls
 * alternate between the paths; best of `--reps` passes. Prints ns per row, the ratio, and the
 * path `dotsInto` takes for each shape.
 *
 * Then the evidence's diagnostic bests (`bestTokensInto`) over the first bank: 10 memories of
 * 20–60 consecutive tokens, each asked by 9 of 11 query rows (a search's floored pairs), with
 * float64 over every token against with `maxAbs` (float32 estimates, float64 for the tokens the
 * bound cannot rule out), alternating; ms per call, the ratio, and whether both give the same
 * tokens and similarities.
 *
 * @example
 * pnpm bench:dots --markdown
 */
import { bestTokensInto, dotsIntoJs, dotsIntoWasm, runsOf } from '@bfe/index/dots';
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

// The evidence bests, float64 against float32 proposals, over the first bank.
let bests: object;
{
  const size = options.banks[0]!;
  const bank = Float32Array.from({ length: size * DIM }, next);
  let maxAbs = 0;
  for (const x of bank) maxAbs = Math.max(maxAbs, Math.abs(x));
  const queries = Float32Array.from({ length: 11 * DIM }, next);
  const took = { float64: Infinity, float32: Infinity };
  let same = true;
  for (let rep = 0; rep < options.reps; rep++) {
    const pass = { float64: 0, float32: 0 };
    for (let c = 0; c < options.calls / 10; c++) {
      const quads: number[] = [];
      for (let m = 0; m < 10; m++) {
        const start = Math.floor((next() + 0.5) * (size - 60));
        const end = start + 20 + Math.floor((next() + 0.5) * 40);
        for (let row = 0; row < 11; row++)
          if ((row + m) % 5 !== 0) quads.push(quads.length / 4, row, start, end);
      }
      const q = Int32Array.from(quads);
      const n = q.length / 4;
      const out = {
        float64: { token: new Int32Array(n), similarity: new Float64Array(n) },
        float32: { token: new Int32Array(n), similarity: new Float64Array(n) },
      };
      const order =
        c % 2 === 0 ? (['float64', 'float32'] as const) : (['float32', 'float64'] as const);
      for (const path of order) {
        const t0 = performance.now();
        bestTokensInto(
          bank,
          DIM,
          queries,
          q,
          out[path].token,
          out[path].similarity,
          path === 'float32' ? maxAbs : undefined,
        );
        pass[path] += performance.now() - t0;
      }
      for (let i = 0; i < n; i++) {
        same &&= out.float64.token[i] === out.float32.token[i];
        same &&= out.float64.similarity[i] === out.float32.similarity[i];
      }
    }
    took.float64 = Math.min(took.float64, pass.float64);
    took.float32 = Math.min(took.float32, pass.float32);
  }
  const perCall = (ms: number): number => ms / (options.calls / 10);
  printTable(
    {
      head: ['bank rows', 'float64 ms/call', 'float32 proposals ms/call', '×', 'same bests'],
      rows: [
        [
          String(size),
          perCall(took.float64).toFixed(3),
          perCall(took.float32).toFixed(3),
          (took.float64 / took.float32).toFixed(2),
          String(same),
        ],
      ],
    },
    { markdown: options.markdown },
  );
  bests = {
    size,
    float64MsPerCall: perCall(took.float64),
    float32MsPerCall: perCall(took.float32),
    same,
  };
}
printJson({ dim: DIM, rowsPerCall: ROWS, results: json, bests });
