/**
 * One benchmark measurement in its own process (so its peak RSS is its own): bfe or
 * transformers.js. Usage:
 * `node --conditions=@bfe/source --import tsx apps/bench/src/encoder/worker.ts <job.json>`;
 * the parent, `encoder.bench.ts`, writes the job and reads the result file.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { openEncoder, TextTokenizer } from '@bfe/encoder';
import { peakRssMb, rssMb, startClock } from '../shared/machine.js';
import { readJob, readTexts, writeResult, type BenchJob, type PeerSuccess } from './protocol.js';

const require = createRequire(import.meta.url);
/** Resolves from bfe's encoder package, so that the versions reported are the ones bfe runs. */
const encoderRequire = createRequire(import.meta.resolve('@bfe/encoder'));

async function main(): Promise<void> {
  const jobFile = process.argv[2];
  if (jobFile === undefined) throw new Error('usage: worker.ts <job.json>');
  const job = await readJob(jobFile);
  try {
    const texts = await readTexts(job.textsFile);
    const result =
      job.peer === 'bfe' ? await runBfe(job, texts) : await runTransformersJs(job, texts);
    await writeResult(job.resultFile, result);
  } catch (error) {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await writeResult(job.resultFile, { ok: false, error: message });
    process.exitCode = 1;
  }
}

async function runBfe(job: BenchJob, texts: readonly string[]): Promise<PeerSuccess> {
  const { modelDir, manifest } = job;
  if (modelDir === undefined || manifest === undefined)
    throw new Error('bfe job without modelDir/manifest');
  const baseRssMb = rssMb();
  const t0 = performance.now();
  const encoder = await openEncoder(modelDir, manifest, {
    threads: job.threads,
    maxLength: job.maxLength,
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  const options = {
    ...(job.maxBatchTokens === undefined ? {} : { maxBatchTokens: job.maxBatchTokens }),
    ...(job.chunkSize === undefined ? {} : { chunkSize: job.chunkSize }),
    ...(job.maxBatchSize === undefined ? {} : { maxBatchSize: job.maxBatchSize }),
  };
  for await (const chunk of encoder.encode(texts.slice(0, job.warmupTexts), 'passage', options))
    void chunk;

  const wanted = new Map(job.sample.map((index, k) => [index, k]));
  const sample: number[][] = job.sample.map(() => []);
  let contentTokens = 0;
  const clock = startClock();
  for await (const chunk of encoder.encode(texts, 'passage', options)) {
    // Only bookkeeping inside the timed loop: the chunk itself is bfe's output.
    contentTokens += chunk.tokenId.length;
    for (let i = 0; i < chunk.count; i++) {
      const k = wanted.get(chunk.start + i);
      if (k !== undefined)
        sample[k] = Array.from(chunk.pooled.subarray(i * chunk.dim, (i + 1) * chunk.dim));
    }
  }
  const timed = clock();
  const peak = peakRssMb();
  await encoder.dispose();

  const tokenizer = new TextTokenizer(join(modelDir, manifest.tokenizerFile), job.maxLength);
  let tokens = 0;
  for (const t of await tokenizer.encode(texts)) tokens += t.ids.length;
  return {
    ok: true,
    ...timed,
    loadSeconds,
    peakRssMb: peak,
    baseRssMb,
    texts: texts.length,
    tokens,
    contentTokens,
    sample,
    versions: {
      'onnxruntime-node': packageVersion(encoderRequire, 'onnxruntime-node'),
      '@anush008/tokenizers': packageVersion(encoderRequire, '@anush008/tokenizers'),
    },
  };
}

async function runTransformersJs(job: BenchJob, texts: readonly string[]): Promise<PeerSuccess> {
  const { hfRoot, hfModel, batchSize } = job;
  if (hfRoot === undefined || hfModel === undefined || batchSize === undefined) {
    throw new Error('transformers-js job without hfRoot/hfModel/batchSize');
  }
  const baseRssMb = rssMb();
  const t0 = performance.now();
  const tjs = await import('@huggingface/transformers');
  tjs.env.allowRemoteModels = false;
  tjs.env.allowLocalModels = true;
  tjs.env.localModelPath = hfRoot;
  const extractor = await tjs.pipeline('feature-extraction', hfModel, {
    device: 'cpu',
    dtype: 'fp32',
    session_options: { intraOpNumThreads: job.threads },
  });
  const loadSeconds = (performance.now() - t0) / 1000;
  const call = { pooling: 'mean', normalize: true } as const;
  await extractor(texts.slice(0, Math.min(job.warmupTexts, batchSize)), call);

  // The pipeline pads each call to its longest text and does not sort; `sorted` batches texts
  // by length first, as sentence-transformers does, to show what that alone is worth.
  const order = Array.from({ length: texts.length }, (_, i) => i);
  const wanted = new Map(job.sample.map((index, k) => [index, k]));
  const sample: number[][] = job.sample.map(() => []);
  const clock = startClock();
  if (job.sorted === true) order.sort((a, b) => texts[b]!.length - texts[a]!.length || a - b);
  for (let at = 0; at < order.length; at += batchSize) {
    const rows = order.slice(at, at + batchSize);
    const out = await extractor(
      rows.map((r) => texts[r]!),
      call,
    );
    const data = out.data as Float32Array;
    const dim = data.length / rows.length;
    for (let b = 0; b < rows.length; b++) {
      const k = wanted.get(rows[b]!);
      if (k !== undefined) sample[k] = Array.from(data.subarray(b * dim, (b + 1) * dim));
    }
  }
  const timed = clock();
  const peak = peakRssMb();

  let tokens = 0;
  for (let at = 0; at < texts.length; at += batchSize) {
    const enc = extractor.tokenizer(texts.slice(at, at + batchSize), {
      padding: true,
      truncation: true,
    });
    const mask = (enc as { attention_mask: { data: BigInt64Array } }).attention_mask.data;
    for (let j = 0; j < mask.length; j++) tokens += Number(mask[j]);
  }
  await extractor.dispose();
  return {
    ok: true,
    ...timed,
    loadSeconds,
    peakRssMb: peak,
    baseRssMb,
    texts: texts.length,
    tokens,
    sample,
    versions: {
      '@huggingface/transformers': tjs.env.version,
      'onnxruntime-node': packageVersion(
        createRequire(require.resolve('@huggingface/transformers')),
        'onnxruntime-node',
      ),
    },
  };
}

/** The installed version of a package, as `req` resolves it. */
function packageVersion(req: NodeJS.Require, name: string): string {
  try {
    // Packages with an `exports` map may hide package.json: walk up from the entry instead.
    let dir = req.resolve(name);
    for (let i = 0; i < 8; i++) {
      dir = join(dir, '..');
      try {
        const pkg = req(join(dir, 'package.json')) as { name?: string; version?: string };
        if (pkg.name === name && pkg.version !== undefined) return pkg.version;
      } catch {
        // not a package root: keep walking
      }
    }
  } catch {
    // fall through
  }
  return 'unknown';
}

await main();
