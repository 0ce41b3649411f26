/**
 * The `graph-only` bfe variant of `pnpm bench:encoder`: the onnxruntime session alone, on the
 * padded batches bfe's pass would build (texts per chunk 2,048 sorted longest first, ≤ 32 texts
 * and ≤ 8,192 padded tokens per batch: the package defaults), with tokenisation and the batch
 * arrays prepared before the clock starts and nothing done with the states. Its tokens/s bounds
 * what any change outside the graph (pooling, copies, tokenisation, overlap) can reach.
 */
import { join } from 'node:path';
import { EncoderSession, TextTokenizer, type SessionOptions } from '@bfe/encoder';
import type { ModelManifest } from '@bfe/models';
import { startClock } from '../shared/machine.js';

/** One padded batch, ready to feed. */
interface Batch {
  readonly ids: BigInt64Array;
  readonly mask: BigInt64Array;
  readonly batch: number;
  readonly seq: number;
}

/** The batches of bfe's pass over `texts` with the package defaults. */
async function batchesOf(tokenizer: TextTokenizer, texts: readonly string[]): Promise<Batch[]> {
  const chunkSize = 2048;
  const maxBatchTokens = 8192;
  const maxBatchSize = 32;
  const out: Batch[] = [];
  for (let start = 0; start < texts.length; start += chunkSize) {
    const tokenized = await tokenizer.encode(texts.slice(start, start + chunkSize));
    const order = Array.from({ length: tokenized.length }, (_, i) => i).sort(
      (a, b) => tokenized[b]!.ids.length - tokenized[a]!.ids.length || a - b,
    );
    let at = 0;
    while (at < order.length) {
      const seq = tokenized[order[at]!]!.ids.length;
      const size = Math.max(
        1,
        Math.min(maxBatchSize, Math.floor(maxBatchTokens / seq), order.length - at),
      );
      const ids = new BigInt64Array(size * seq);
      const mask = new BigInt64Array(size * seq);
      for (let b = 0; b < size; b++) {
        const t = tokenized[order[at + b]!]!.ids;
        for (let j = 0; j < t.length; j++) {
          ids[b * seq + j] = BigInt(t[j]!);
          mask[b * seq + j] = 1n;
        }
      }
      out.push({ ids, mask, batch: size, seq });
      at += size;
    }
  }
  return out;
}

/** Times the session alone over the pass's batches (after a warm-up of the first batch). */
export async function graphOnly(
  modelDir: string,
  manifest: ModelManifest,
  texts: readonly string[],
  maxLength: number,
  session: SessionOptions,
): Promise<{
  seconds: number;
  cpuSeconds: number;
  otherCpuSeconds: number | null;
  loadSeconds: number;
}> {
  const tokenizer = new TextTokenizer(join(modelDir, manifest.tokenizerFile), maxLength);
  const batches = await batchesOf(tokenizer, texts);
  const t0 = performance.now();
  const s = await EncoderSession.open(join(modelDir, manifest.onnxFile), session);
  const loadSeconds = (performance.now() - t0) / 1000;
  try {
    const first = batches[0];
    if (first !== undefined) await s.run(first.ids, first.mask, first.batch, first.seq);
    const clock = startClock();
    for (const b of batches) await s.run(b.ids, b.mask, b.batch, b.seq);
    return { ...clock(), loadSeconds };
  } finally {
    await s.dispose();
  }
}
