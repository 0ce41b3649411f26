/**
 * One benchmark measurement in its own process (so its peak RSS is its own): bfe or
 * transformers.js. Usage:
 * `node --conditions=@bfe/source --import tsx apps/bench/src/encoder/worker.ts <job.json>`;
 * the parent, `encoder.bench.ts`, writes the job and reads the result file.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, symlink } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { openEncoder, TextTokenizer, type SessionOptions } from '@bfe/encoder';
import { MODEL_MANIFEST_FILE, modelManifestSchema } from '@bfe/models';
import { peakRssMb, rssMb, startClock } from '../shared/machine.js';
import { graphOnly } from './graph-only.js';
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
  const v = job.variant ?? {};
  let { modelDir, manifest } = job;
  if (v.modelDir !== undefined) {
    modelDir = v.modelDir;
    const raw: unknown = JSON.parse(await readFile(join(modelDir, MODEL_MANIFEST_FILE), 'utf8'));
    manifest = modelManifestSchema.parse(raw);
  }
  if (modelDir === undefined || manifest === undefined)
    throw new Error('bfe job without modelDir/manifest');
  let session: SessionOptions = {
    threads: job.threads,
    ...(v.interOpThreads === undefined ? {} : { interOpThreads: v.interOpThreads }),
    ...(v.graphOptimizationLevel === undefined
      ? {}
      : { graphOptimizationLevel: v.graphOptimizationLevel }),
    ...(v.spinning === undefined ? {} : { spinning: v.spinning }),
    ...(v.preallocate === undefined ? {} : { preallocate: v.preallocate }),
  };
  const baseRssMb = rssMb();
  if (v.graphOnly === true) {
    const timed = await graphOnly(modelDir, manifest, texts, job.maxLength, session);
    const tokenizer = new TextTokenizer(join(modelDir, manifest.tokenizerFile), job.maxLength);
    let tokens = 0;
    for (const t of await tokenizer.encode(texts)) tokens += t.ids.length;
    return {
      ok: true,
      ...timed,
      peakRssMb: peakRssMb(),
      baseRssMb,
      texts: texts.length,
      tokens,
      sample: job.sample.map(() => []),
      versions: {
        'onnxruntime-node': packageVersion(encoderRequire, 'onnxruntime-node'),
        model: `${manifest.name} ${manifest.modelSha256.slice(0, 12)}`,
      },
    };
  }
  if (v.savedOptimized === true) {
    // Untimed: open once at level `all`, saving the optimised graph; the timed session reads it.
    if (job.work === undefined) throw new Error('saved-opt needs a scratch directory');
    const dir = await mkdtemp(join(job.work, 'saved-opt-'));
    const saved = await openEncoder(modelDir, manifest, {
      ...session,
      graphOptimizationLevel: 'all',
      optimizedModelPath: join(dir, manifest.onnxFile),
      maxLength: job.maxLength,
    });
    await saved.dispose();
    await symlink(join(modelDir, manifest.tokenizerFile), join(dir, manifest.tokenizerFile));
    modelDir = dir;
    session = { ...session, graphOptimizationLevel: v.graphOptimizationLevel ?? 'disabled' };
  }
  const t0 = performance.now();
  const encoder = await openEncoder(modelDir, manifest, { ...session, maxLength: job.maxLength });
  const loadSeconds = (performance.now() - t0) / 1000;
  const options = {
    ...(v.overlapTokenization === undefined ? {} : { overlapTokenization: v.overlapTokenization }),
  };
  for await (const chunk of encoder.encode(texts.slice(0, job.warmupTexts), 'passage', options))
    void chunk;

  const wanted = new Map(job.sample.map((index, k) => [index, k]));
  const sample: number[][] = job.sample.map(() => []);
  const sampleTokens: number[][] = job.sample.map(() => []);
  const hash = createHash('sha256');
  let hashMs = 0;
  let contentTokens = 0;
  const clock = startClock();
  for await (const chunk of encoder.encode(texts, 'passage', options)) {
    // Only bookkeeping inside the timed loop: the chunk itself is bfe's output. The digest's
    // time is measured and taken out below.
    const h0 = performance.now();
    hash.update(
      new Uint8Array(chunk.pooled.buffer, chunk.pooled.byteOffset, chunk.pooled.byteLength),
    );
    const tv = chunk.tokenVectors;
    hash.update(new Uint8Array(tv.buffer, tv.byteOffset, tv.byteLength));
    let first = 0;
    for (let i = 0; i < chunk.count; i++) {
      const n = chunk.nTokens[i]!;
      const k = wanted.get(chunk.start + i);
      if (k !== undefined) {
        sample[k] = Array.from(chunk.pooled.subarray(i * chunk.dim, (i + 1) * chunk.dim));
        sampleTokens[k] = Array.from(tv.subarray(first * chunk.dim, (first + n) * chunk.dim));
      }
      first += n;
    }
    contentTokens += chunk.tokenId.length;
    hashMs += performance.now() - h0;
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
    seconds: timed.seconds - hashMs / 1000,
    loadSeconds,
    peakRssMb: peak,
    baseRssMb,
    texts: texts.length,
    tokens,
    contentTokens,
    sample,
    sampleTokens,
    digest: hash.digest('hex'),
    versions: {
      'onnxruntime-node': packageVersion(encoderRequire, 'onnxruntime-node'),
      '@anush008/tokenizers': packageVersion(encoderRequire, '@anush008/tokenizers'),
      model: `${manifest.name} ${manifest.modelSha256.slice(0, 12)}`,
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

  // The pipeline pads each call to its longest text and does not sort: batches in dataset order.
  const wanted = new Map(job.sample.map((index, k) => [index, k]));
  const sample: number[][] = job.sample.map(() => []);
  const clock = startClock();
  for (let at = 0; at < texts.length; at += batchSize) {
    const batch = texts.slice(at, at + batchSize);
    const out = await extractor(batch, call);
    const data = out.data as Float32Array;
    const dim = data.length / batch.length;
    for (let b = 0; b < batch.length; b++) {
      const k = wanted.get(at + b);
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
