import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { EncoderSession } from './onnx-session.js';
import { encodePass, type EncodedChunk } from './pass.js';
import { TextTokenizer } from './tokenizer.js';

const tiny = fileURLToPath(new URL('../fixtures/tiny-tokenizer.json', import.meta.url));
const DIM = 5;

/** A deterministic stand-in for the graph: the state of token id t at position j. */
function state(t: number, j: number, k: number): number {
  return Math.sin(t * 1.3 + j * 0.7 + k * 2.1) + 0.1 * k;
}

function fakeSession(calls: Array<[number, number]>): EncoderSession {
  return {
    inputNames: ['input_ids', 'attention_mask'],
    run: (ids: BigInt64Array, mask: BigInt64Array, batch: number, seq: number) => {
      calls.push([batch, seq]);
      const states = new Float32Array(batch * seq * DIM);
      for (let b = 0; b < batch; b++)
        for (let j = 0; j < seq; j++)
          for (let k = 0; k < DIM; k++) {
            // Padding gets garbage, so a pooling that reads it would be caught.
            states[(b * seq + j) * DIM + k] =
              mask[b * seq + j] === 1n ? state(Number(ids[b * seq + j]), j, k) : 1e6;
          }
      return Promise.resolve({ states, dim: DIM });
    },
    dispose: () => Promise.resolve(),
  } as unknown as EncoderSession;
}

async function collect(it: AsyncGenerator<EncodedChunk>): Promise<EncodedChunk[]> {
  const out: EncodedChunk[] = [];
  for await (const c of it) out.push(c);
  return out;
}

function unit(v: number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / n);
}

const texts = ['the cat sat on a mat', 'hello', 'a dog', 'the mats', 'hello world the cat'];

describe('encodePass', () => {
  it('pools natively (masked mean, normalised) and keeps unit content-token states, against a float64 reference', async () => {
    const tokenizer = new TextTokenizer(tiny, 32);
    const tokenized = await tokenizer.encode(texts);
    const chunks = await collect(
      encodePass(fakeSession([]), tokenizer, { pooling: 'mean', normalize: true }, texts, {
        chunkSize: 2,
        maxBatchTokens: 12,
      }),
    );
    expect(chunks.map((c) => [c.start, c.count])).toEqual([
      [0, 2],
      [2, 2],
      [4, 1],
    ]);
    for (const c of chunks) {
      let w = 0;
      for (let i = 0; i < c.count; i++) {
        const ids = Array.from(tokenized[c.start + i]!.ids);
        const mean = Array.from(
          { length: DIM },
          (_, k) => ids.reduce((s, t, j) => s + state(t, j, k), 0) / ids.length,
        );
        const expected = unit(mean);
        for (let k = 0; k < DIM; k++) expect(c.pooled[i * DIM + k]).toBeCloseTo(expected[k]!, 6);
        const content = ids.map((t, j) => [t, j] as const).slice(1, -1);
        expect(c.nTokens[i]).toBe(content.length);
        for (const [t, j] of content) {
          expect(c.tokenOwner[w]).toBe(c.start + i);
          expect(c.tokenPosition[w]).toBe(j);
          expect(c.tokenId[w]).toBe(t);
          const ref = unit(Array.from({ length: DIM }, (_, k) => state(t, j, k)));
          for (let k = 0; k < DIM; k++) expect(c.tokenVectors[w * DIM + k]).toBeCloseTo(ref[k]!, 6);
          w++;
        }
      }
      expect(w).toBe(c.tokenOwner.length);
    }
  });

  it('takes the CLS state or the last real token for those poolings', async () => {
    const tokenizer = new TextTokenizer(tiny, 32);
    const [cls] = await collect(
      encodePass(fakeSession([]), tokenizer, { pooling: 'cls', normalize: false }, [
        'a dog',
        'hello',
      ]),
    );
    const [last] = await collect(
      encodePass(fakeSession([]), tokenizer, { pooling: 'last', normalize: false }, [
        'a dog',
        'hello',
      ]),
    );
    for (let k = 0; k < DIM; k++) {
      expect(cls!.pooled[k]).toBeCloseTo(state(2, 0, k), 6); // [CLS] at position 0
      expect(last!.pooled[k]).toBeCloseTo(state(3, 3, k), 6); // [SEP] after "a dog"
      expect(last!.pooled[DIM + k]).toBeCloseTo(state(3, 2, k), 6); // [SEP] after "hello"
    }
  });

  it('buckets by length so a batch never exceeds the padded-token budget', async () => {
    const calls: Array<[number, number]> = [];
    const tokenizer = new TextTokenizer(tiny, 32);
    await collect(
      encodePass(fakeSession(calls), tokenizer, { pooling: 'mean', normalize: true }, texts, {
        maxBatchTokens: 10,
      }),
    );
    expect(calls.length).toBeGreaterThan(1);
    for (const [b, s] of calls) expect(b * s <= 10 || b === 1).toBe(true);
    expect(calls.reduce((n, [b]) => n + b, 0)).toBe(texts.length);
  });

  it('gives the same outputs whatever the batching', async () => {
    const tokenizer = new TextTokenizer(tiny, 32);
    const spec = { pooling: 'mean', normalize: true } as const;
    const [a] = await collect(
      encodePass(fakeSession([]), tokenizer, spec, texts, { maxBatchTokens: 4 }),
    );
    const [b] = await collect(
      encodePass(fakeSession([]), tokenizer, spec, texts, { maxBatchTokens: 4096 }),
    );
    expect(Array.from(a!.pooled)).toEqual(Array.from(b!.pooled));
    expect(Array.from(a!.tokenVectors)).toEqual(Array.from(b!.tokenVectors));
  });

  it('reports progress up to the total', async () => {
    const seen: number[] = [];
    const tokenizer = new TextTokenizer(tiny, 32);
    await collect(
      encodePass(fakeSession([]), tokenizer, { pooling: 'mean', normalize: true }, texts, {
        maxBatchTokens: 8,
        onProgress: (done, total) => {
          expect(total).toBe(texts.length);
          seen.push(done);
        },
      }),
    );
    expect(seen.at(-1)).toBe(texts.length);
    expect([...seen].sort((x, y) => x - y)).toEqual(seen);
  });

  it('overlaps tokenisation with the graph when asked, with the same outputs, and consumes a reused state buffer before the next run', async () => {
    const tokenizer = new TextTokenizer(tiny, 32);
    const spec = { pooling: 'mean', normalize: true } as const;
    const run = async (overlap: boolean) => {
      const log: string[] = [];
      const encode = tokenizer.encode.bind(tokenizer);
      const spy = Object.create(tokenizer) as TextTokenizer;
      spy.encode = (batch, prefix) => {
        log.push(`tokenize ${String(batch[0])}`);
        return encode(batch, prefix);
      };
      // One state buffer reused by every run, as a preallocated onnxruntime output is.
      const inner = fakeSession([]);
      let shared = new Float32Array(0);
      const session = {
        ...inner,
        run: async (ids: BigInt64Array, mask: BigInt64Array, batch: number, seq: number) => {
          log.push('run');
          const { states, dim } = await inner.run(ids, mask, batch, seq);
          if (shared.length < states.length) shared = new Float32Array(states.length);
          shared.fill(Number.NaN);
          shared.set(states);
          return { states: shared.subarray(0, states.length), dim };
        },
      } as unknown as EncoderSession;
      const chunks = await collect(
        encodePass(session, spy, spec, texts, {
          chunkSize: 2,
          maxBatchTokens: 4,
          overlapTokenization: overlap,
        }),
      );
      return { chunks, log };
    };
    const plain = await run(false);
    const overlapped = await run(true);
    expect(plain.log.slice(0, 3)).toEqual(['tokenize the cat sat on a mat', 'run', 'run']);
    expect(overlapped.log.slice(0, 2)).toEqual(['tokenize the cat sat on a mat', 'tokenize a dog']);
    expect(overlapped.log.filter((l) => l.startsWith('tokenize'))).toHaveLength(3);
    expect(overlapped.chunks.length).toBe(plain.chunks.length);
    for (let c = 0; c < plain.chunks.length; c++) {
      const a = plain.chunks[c]!;
      const b = overlapped.chunks[c]!;
      expect(Array.from(b.pooled)).toEqual(Array.from(a.pooled));
      expect(Array.from(b.tokenVectors)).toEqual(Array.from(a.tokenVectors));
      expect(Array.from(b.tokenId)).toEqual(Array.from(a.tokenId));
      expect(a.pooled.some(Number.isNaN)).toBe(false);
    }
    const [ref] = await collect(encodePass(fakeSession([]), tokenizer, spec, texts));
    const joined = plain.chunks.flatMap((c) => Array.from(c.tokenVectors));
    expect(joined).toEqual(Array.from(ref!.tokenVectors));
  });

  it('surfaces a tokenisation error of an overlapped chunk where it is reached', async () => {
    const tokenizer = new TextTokenizer(tiny, 32);
    const bad: unknown[] = ['hello', 'a dog', 'the mats', 42];
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const c of encodePass(
          fakeSession([]),
          tokenizer,
          { pooling: 'mean', normalize: true },
          bad,
          { chunkSize: 2, overlapTokenization: true },
        ))
          seen.push(c.start);
      })(),
    ).rejects.toThrow(/text \[1\] is number/);
    expect(seen).toEqual([0]);
  });
});
