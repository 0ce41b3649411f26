import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { ArtifactCorruptError, ConfigError, type Benchmark } from '@bfe/core';
import type { ModelManifest } from '@bfe/models';
import { openBank } from './bank-reader.js';
import { encodeBenchmark } from './encode-benchmark.js';
import { openEncoder, type Encoder } from './encoder.js';
import type { EncoderSession } from './onnx-session.js';
import { DEFAULT_MAX_BATCH_ATTENTION, encodePass, type EncodedChunk } from './pass.js';
import { TextTokenizer } from './tokenizer.js';
import { WINDOW_POOLING, windowOwnership, windowStarts, type WindowSpec } from './window.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const tiny = fixture('tiny-tokenizer.json');
const DIM = 5;
const MEAN = { pooling: 'mean', normalize: true } as const;

/** The fake graph's state of token id t at row position j: it depends on where the row starts. */
function state(t: number, j: number, k: number): number {
  return Math.sin(t * 1.3 + j * 0.7 + k * 2.1) + 0.1 * k;
}

function fakeSession(): EncoderSession {
  return {
    inputNames: ['input_ids', 'attention_mask'],
    run: (ids: BigInt64Array, mask: BigInt64Array, batch: number, seq: number) => {
      const states = new Float32Array(batch * seq * DIM);
      for (let b = 0; b < batch; b++)
        for (let j = 0; j < seq; j++)
          for (let k = 0; k < DIM; k++)
            states[(b * seq + j) * DIM + k] =
              mask[b * seq + j] === 1n ? state(Number(ids[b * seq + j]), j, k) : 1e6;
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

function unit(v: readonly number[]): number[] {
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => x / n);
}

/** Brute force: the window (index) farthest from an edge for content token i, ties earliest. */
function owner(starts: readonly number[], capacity: number, i: number): number {
  let best = -1;
  let distance = -1;
  starts.forEach((s, w) => {
    if (i < s || i >= s + capacity) return;
    const d = Math.min(i - s, s + capacity - 1 - i);
    if (d > distance) [best, distance] = [w, d];
  });
  return best;
}

const short = ['the cat sat on a mat', 'hello', 'a dog', 'the mats', 'hello world the cat'];
const long = [
  'the cat sat on a mat . '.repeat(6).trim(), // 42 content tokens
  'hello world . a dog sat on the mats . '.repeat(3).trim(),
];

describe('windowStarts and windowOwnership', () => {
  it('cover every token, end on the last one, and give each token to its farthest-from-edge window', () => {
    expect(windowStarts(10, 4, 3)).toEqual([0, 3, 6]);
    // Tokens 3 and 6 sit on the edge of two windows each: ties go to the earlier window.
    expect(windowOwnership([0, 3, 6], 4, 10)).toEqual([
      [0, 4],
      [4, 7],
      [7, 10],
    ]);
    for (let n = 1; n <= 40; n++)
      for (let capacity = 1; capacity <= 12; capacity++)
        for (let stride = 1; stride <= capacity; stride++) {
          const starts = windowStarts(n, capacity, stride);
          expect(starts[0]).toBe(0);
          expect(Math.max(...starts) + capacity).toBe(Math.max(n, capacity));
          const ranges = windowOwnership(starts, Math.min(capacity, n), n);
          for (const [w, [from, to]] of ranges.entries())
            for (let i = from; i < to; i++) expect(owner(starts, Math.min(capacity, n), i)).toBe(w);
          expect(ranges.at(-1)![1]).toBe(n);
        }
  });
});

describe('encodePass with windows', () => {
  it('encodes texts that fit the window byte for byte as the truncating pass does', async () => {
    const opts = { chunkSize: 2, maxBatchTokens: 12 };
    const before = await collect(
      encodePass(fakeSession(), new TextTokenizer(tiny, 16), MEAN, short, opts),
    );
    const after = await collect(
      encodePass(fakeSession(), new TextTokenizer(tiny, undefined), MEAN, short, {
        ...opts,
        window: { size: 16, stride: 4 },
      }),
    );
    expect(after.length).toBe(before.length);
    for (const [i, c] of after.entries()) {
      const { windows, ...rest } = c;
      expect(Array.from(windows!)).toEqual(new Array<number>(c.count).fill(1));
      const old = before[i]!;
      for (const key of Object.keys(old) as Array<keyof EncodedChunk>) {
        const [a, b] = [rest[key as keyof typeof rest], old[key]];
        if (ArrayBuffer.isView(b))
          expect(Buffer.from((a as Uint8Array).buffer).equals(Buffer.from(b.buffer))).toBe(true);
        else expect(a).toEqual(b);
      }
    }
  });

  it.each([
    [{ size: 10, stride: 5 }, 10_000],
    [{ size: 12, stride: 10 }, 40], // parts of at most 40 input tokens: one text per part
    [{ size: 7, stride: 1 }, 10_000],
  ] as const)(
    'window %o (part budget %i): every content token once, at its true position, from its owning window; pooled = float64 reference',
    async (window: WindowSpec, maxChunkTokens: number) => {
      const texts = [short[0]!, long[0]!, short[1]!, long[1]!];
      const full = await new TextTokenizer(tiny, undefined).encode(texts);
      const chunks = await collect(
        encodePass(fakeSession(), new TextTokenizer(tiny, undefined), MEAN, texts, {
          chunkSize: 3,
          maxBatchTokens: 24,
          window,
          maxChunkTokens,
        }),
      );
      let next = 0;
      for (const c of chunks) {
        expect(c.start).toBe(next);
        next += c.count;
        let w = 0;
        for (let r = 0; r < c.count; r++) {
          const ids = Array.from(full[c.start + r]!.ids);
          const n = ids.length - 2;
          const capacity = window.size - 2;
          const fits = ids.length <= window.size;
          const starts = fits ? [0] : windowStarts(n, capacity, window.stride);
          expect(c.windows![r]).toBe(starts.length);
          expect(c.truncated[r]).toBe(0);
          expect(c.nTokens[r]).toBe(n);
          // float64 reference of the pooled vector: [CLS] from the first window, each content
          // token from its owner, [SEP] from the last, over n + 2 tokens.
          const sum = new Array<number>(DIM).fill(0);
          const last = fits ? ids.length - 1 : window.size - 1;
          for (let k = 0; k < DIM; k++)
            sum[k]! += state(ids[0]!, 0, k) + state(ids.at(-1)!, last, k);
          for (let i = 0; i < n; i++) {
            const o = fits ? 0 : owner(starts, capacity, i);
            const j = 1 + i - starts[o]!; // position within the owning window
            const t = ids[1 + i]!;
            expect(c.tokenOwner[w]).toBe(c.start + r);
            expect(c.tokenPosition[w]).toBe(1 + i); // its true position in the memory
            expect(c.tokenId[w]).toBe(t);
            const ref = unit(Array.from({ length: DIM }, (_, k) => state(t, j, k)));
            for (let k = 0; k < DIM; k++) {
              expect(c.tokenVectors[w * DIM + k]).toBeCloseTo(ref[k]!, 6);
              sum[k]! += state(t, j, k);
            }
            w++;
          }
          const pooled = unit(sum.map((x) => x / (n + 2)));
          for (let k = 0; k < DIM; k++) expect(c.pooled[r * DIM + k]).toBeCloseTo(pooled[k]!, 6);
        }
        expect(w).toBe(c.tokenOwner.length);
      }
      expect(next).toBe(texts.length);
      if (maxChunkTokens === 40) expect(chunks.map((c) => c.count)).toEqual([1, 1, 1, 1]);
    },
  );

  it('bounds the attention a batch holds: 256-token windows run 8 a batch, 128-token rows 32, same outputs', async () => {
    // onnxruntime's arena keeps the high-water mark of its attention buffers (rows × length²):
    // 32 windows of 256 held ≈ 340 MB more than the truncated pass's 32 rows of 128.
    const shapes: Array<[number, number]> = [];
    const recording = (): EncoderSession => {
      const inner = fakeSession();
      return {
        ...inner,
        run: (ids: BigInt64Array, mask: BigInt64Array, batch: number, seq: number) => {
          shapes.push([batch, seq]);
          return inner.run(ids, mask, batch, seq);
        },
      } as unknown as EncoderSession;
    };
    const texts = Array.from({ length: 12 }, (_, i) => `${long[i % 2]!} `.repeat(8)); // > 256 tokens
    const window = { size: 256, stride: 192 };
    const windowed = await collect(
      encodePass(recording(), new TextTokenizer(tiny, undefined), MEAN, texts, { window }),
    );
    expect(shapes.every(([b, seq]) => b * seq * seq <= DEFAULT_MAX_BATCH_ATTENTION)).toBe(true);
    const full = shapes.filter(([, seq]) => seq === 256);
    expect(full.length).toBeGreaterThan(1); // maxBatchTokens alone would run them as one batch
    expect(Math.max(...full.map(([b]) => b))).toBe(8);
    shapes.length = 0;
    const unbounded = await collect(
      encodePass(recording(), new TextTokenizer(tiny, undefined), MEAN, texts, {
        window,
        maxBatchAttention: Number.POSITIVE_INFINITY,
      }),
    );
    expect(Math.max(...shapes.map(([b]) => b))).toBeGreaterThan(8);
    expect(windowed.length).toBe(unbounded.length);
    for (const [i, c] of windowed.entries())
      for (const key of ['pooled', 'tokenVectors', 'tokenPosition', 'tokenOwner'] as const)
        expect(Buffer.from(c[key].buffer).equals(Buffer.from(unbounded[i]![key].buffer))).toBe(
          true,
        );
    // The truncated pass at maxLength 128 keeps its batches of 32 rows.
    shapes.length = 0;
    await collect(
      encodePass(recording(), new TextTokenizer(tiny, 128), MEAN, Array(40).fill(texts[0]), {}),
    );
    expect(shapes).toEqual([
      [32, 128],
      [8, 128],
    ]);
  });

  it('holds a truncated pass beyond 128 tokens to the states of a chunk of 128-token texts; at 128 nothing is cut', async () => {
    const texts = Array.from({ length: 4 }, (_, i) => `${long[i % 2]!} `.repeat(8)); // 266–338 tokens
    const run = async (maxLength: number, maxChunkTokens?: number) =>
      collect(
        encodePass(fakeSession(), new TextTokenizer(tiny, maxLength), MEAN, texts, {
          chunkSize: 4,
          ...(maxChunkTokens === undefined ? {} : { maxChunkTokens }),
        }),
      );
    // chunkSize 4 × 128 = 512 input tokens a part: texts of 256 two a part, of 512 one.
    expect((await run(128)).map((c) => c.count)).toEqual([4]);
    const at256 = await run(256);
    expect(at256.map((c) => [c.start, c.count])).toEqual([
      [0, 2],
      [2, 2],
    ]);
    const at512 = await run(512);
    expect(at512.map((c) => c.count)).toEqual([1, 1, 1, 1]);
    expect(Math.max(...at512.map((c) => c.tokenOwner.length + 2 * c.count))).toBeLessThanOrEqual(
      512,
    );
    // Same outputs as one uncut chunk.
    const [whole] = await run(512, Number.POSITIVE_INFINITY);
    const joined = (key: 'pooled' | 'tokenVectors' | 'tokenPosition' | 'tokenOwner') =>
      Buffer.concat(at512.map((c) => Buffer.from(c[key].buffer)));
    for (const key of ['pooled', 'tokenVectors', 'tokenPosition', 'tokenOwner'] as const)
      expect(joined(key).equals(Buffer.from(whole![key].buffer))).toBe(true);
  });

  it('refuses a truncating tokenizer, a pooling other than the mean, and a stride the window cannot hold', async () => {
    const run = (tokenizer: TextTokenizer, window: WindowSpec, pooling: 'mean' | 'cls' = 'mean') =>
      collect(encodePass(fakeSession(), tokenizer, { pooling, normalize: true }, long, { window }));
    await expect(run(new TextTokenizer(tiny, 16), { size: 8, stride: 2 })).rejects.toThrow(
      'does not truncate',
    );
    await expect(
      run(new TextTokenizer(tiny, undefined), { size: 8, stride: 2 }, 'cls'),
    ).rejects.toThrow('mean pooling only');
    await expect(run(new TextTokenizer(tiny, undefined), { size: 8, stride: 7 })).rejects.toThrow(
      'less than the stride 7',
    );
  });
});

const manifest: ModelManifest = {
  schemaVersion: 1,
  name: 'tiny',
  modelId: 'test/tiny',
  source: { kind: 'local', detail: 'test' },
  licence: 'none',
  files: [],
  onnxFile: 'model.onnx',
  tokenizerFile: 'tokenizer.json',
  dtype: 'float32',
  pooling: 'mean',
  normalize: true,
  dimension: DIM,
  maxLength: 16,
  maxPositions: 16,
  vocabSize: 18,
  specialTokens: { '[CLS]': 2, '[SEP]': 3 },
  padTokenId: 0,
  prefixes: { query: 'query: ', passage: '' },
  modelSha256: 'c'.repeat(64),
  createdAt: '2026-01-01T00:00:00Z',
};

/** The fake graph behind the encoder interface, windowed or not. */
function fakeEncoder(window: WindowSpec | undefined): Encoder {
  const session = fakeSession();
  const queries = new TextTokenizer(tiny, 16);
  const passages = window === undefined ? queries : new TextTokenizer(tiny, undefined);
  return {
    manifest,
    maxLength: 16,
    window,
    encode: (texts, role, options = {}) =>
      role === 'query'
        ? encodePass(session, queries, MEAN, texts, { ...options, prefix: 'query: ' })
        : encodePass(session, passages, MEAN, texts, {
            ...options,
            ...(window === undefined ? {} : { window }),
          }),
    tokenText: (id) => queries.tokenText(id),
    dispose: () => Promise.resolve(),
  };
}

const benchmark: Benchmark = {
  name: 'tiny',
  options: {},
  memories: [
    { id: 'm1', bankId: 'b1', text: long[0]!, meta: {} },
    { id: 'm2', bankId: 'b1', text: 'a dog', meta: {} },
    { id: 'm3', bankId: 'b2', text: long[1]!, meta: {} },
  ],
  queries: [
    { id: 'q1', text: 'the cat', candidateBankIds: ['b1'], category: 'c', meta: {} },
    { id: 'q2', text: long[1]!, candidateBankIds: ['b2'], category: 'c', meta: {} },
  ],
  subtasks: ['c'],
  sources: [],
};

describe('windowed banks', () => {
  let root: string;
  beforeEach(() => {
    root = tmpDir('bfe-window-');
  });

  it('record the window in bank.json and the memory files, count windowed memories and truncated queries', async () => {
    const out = join(root, 'bank');
    const m = await encodeBenchmark(benchmark, fakeEncoder({ size: 10, stride: 5 }), out);
    expect(m.window).toEqual({
      size: 10,
      stride: 5,
      pooling: WINDOW_POOLING,
      windowedMemories: 2,
      memoryWindows: windowStarts(42, 8, 5).length + 1 + windowStarts(33, 8, 5).length,
    });
    expect(m.memories).toEqual({ rows: 3, tokens: 42 + 2 + 33, truncated: 0, withoutTokens: 0 });
    expect(m.queries.truncated).toBe(1); // queries keep one window of maxLength 16
    const bank = await openBank(out, { window: { size: 10, stride: 5 } });
    // m1's last content token: its true position (after [CLS]), far beyond one window.
    expect(bank.memories.tokenPosition[41]).toBe(42);
    expect(Array.from(bank.memories.tokenOffsets)).toEqual([0, 42, 44, 77]);
    const rows = tableFromIPC(readFileSync(join(out, 'memories.arrow'))).schema.metadata;
    expect([rows.get('bfe.window_size'), rows.get('bfe.window_stride')]).toEqual(['10', '5']);
    expect(rows.get('bfe.window_pooling')).toBe(WINDOW_POOLING);
    const q = tableFromIPC(readFileSync(join(out, 'query-tokens.arrow'))).schema.metadata;
    expect(q.has('bfe.window_size')).toBe(false);
  });

  it('openBank refuses a bank whose windowing differs from the experiment’s', async () => {
    const windowed = join(root, 'windowed');
    const truncated = join(root, 'truncated');
    await encodeBenchmark(benchmark, fakeEncoder({ size: 10, stride: 5 }), windowed);
    const plain = await encodeBenchmark(benchmark, fakeEncoder(undefined), truncated);
    expect(plain.window).toBeUndefined();
    expect(plain.memories.truncated).toBe(2);
    await expect(openBank(windowed, { window: null })).rejects.toThrow(ConfigError);
    await expect(openBank(windowed, { window: { size: 10, stride: 4 } })).rejects.toThrow(
      'encoded with window size 10, stride 5, the experiment asks for window size 10, stride 4',
    );
    await expect(openBank(truncated, { window: { size: 10, stride: 5 } })).rejects.toThrow(
      'encoded with no window (memories truncated at maxLength)',
    );
    await expect(openBank(truncated, { window: null })).resolves.toBeDefined();
    // bank.json edited to claim another window: the files' own metadata disagree.
    const path = join(windowed, 'bank.json');
    const json = JSON.parse(readFileSync(path, 'utf8')) as { window: { size: number } };
    json.window.size = 11;
    writeFileSync(path, JSON.stringify(json));
    await expect(
      openBank(windowed, { window: { size: 11, stride: 5 }, verifyHashes: false }),
    ).rejects.toThrow(ArtifactCorruptError);
  });

  it('openEncoder refuses a window beyond the positions, a stride not below the size, and a non-mean pooling', async () => {
    const dir = tmpDir('bfe-window-model-');
    copyFileSync(fixture('tiny-encoder.onnx'), join(dir, 'model.onnx'));
    copyFileSync(tiny, join(dir, 'tokenizer.json'));
    const open = (window: WindowSpec, pooling: 'mean' | 'cls' = 'mean') =>
      openEncoder(dir, { ...manifest, dimension: 4, pooling }, { window });
    await expect(open({ size: 17, stride: 4 })).rejects.toThrow('outside 3..16');
    await expect(open({ size: 8, stride: 8 })).rejects.toThrow('1..7');
    await expect(open({ size: 8, stride: 4 }, 'cls')).rejects.toThrow(ConfigError);
    const encoder = await open({ size: 8, stride: 4 });
    try {
      const [c] = await collect(encoder.encode([long[0]!], 'passage'));
      expect(c!.nTokens[0]).toBe(42);
      expect(c!.windows![0]).toBe(windowStarts(42, 6, 4).length);
      const [q] = await collect(encoder.encode([long[0]!], 'query'));
      expect(q!.truncated[0]).toBe(1);
      expect(q!.windows).toBeUndefined();
    } finally {
      await encoder.dispose();
    }
  });
});
