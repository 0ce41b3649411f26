import { readdirSync, readFileSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import {
  ArtifactCorruptError,
  DataError,
  DataMissingError,
  LabelLeakError,
  type Benchmark,
} from '@bfe/core';
import { halfToFloat, openBank } from './bank-reader.js';
import { readTokenFileColumns, type VectorFileLayout } from './bank-token-file.js';
import { encodeBenchmark } from './encode-benchmark.js';
import type { Encoder } from './encoder.js';
import type { ModelManifest } from '@bfe/models';
import type { EncoderSession } from './onnx-session.js';
import { encodePass } from './pass.js';
import { TextTokenizer } from './tokenizer.js';

const tiny = fileURLToPath(new URL('../fixtures/tiny-tokenizer.json', import.meta.url));
const DIM = 4;

const manifest: ModelManifest = {
  schemaVersion: 1,
  name: 'fake',
  modelId: 'test/fake',
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
  modelSha256: 'a'.repeat(64),
  createdAt: '2026-01-01T00:00:00Z',
};

/** A fake encoder over the tiny tokenizer; `failAfter` batches makes it throw mid-pass. */
function fakeEncoder(failAfter = Infinity): Encoder {
  let batches = 0;
  const session = {
    run: (ids: BigInt64Array, _mask: BigInt64Array, batch: number, seq: number) => {
      if (++batches > failAfter) return Promise.reject(new Error('device lost'));
      const states = new Float32Array(batch * seq * DIM);
      for (let i = 0; i < states.length; i++)
        states[i] = Math.cos(Number(ids[Math.floor(i / DIM)]) + i);
      return Promise.resolve({ states, dim: DIM });
    },
  } as unknown as EncoderSession;
  const tokenizer = new TextTokenizer(tiny, 16);
  const spec = { pooling: 'mean', normalize: true } as const;
  return {
    manifest,
    maxLength: 16,
    encode: (texts, role, options = {}) =>
      encodePass(session, tokenizer, spec, texts, {
        ...options,
        prefix: role === 'query' ? 'query: ' : '',
      }),
    tokenText: (id) => tokenizer.tokenText(id),
    dispose: () => Promise.resolve(),
  };
}

const benchmark: Benchmark = {
  name: 'tiny',
  options: {},
  memories: [
    { id: 'm1', bankId: 'b1', text: 'the cat sat on a mat', meta: {} },
    { id: 'm2', bankId: 'b1', text: 'a dog', meta: {} },
    { id: 'm3', bankId: 'b2', text: 'hello world', meta: {} },
  ],
  queries: [
    { id: 'q1', text: 'the cat', candidateBankIds: ['b1'], category: 'c', meta: {} },
    { id: 'q2', text: 'hello', candidateBankIds: ['b2'], category: 'c', meta: {} },
  ],
  subtasks: ['c'],
  sources: [],
};

let root: string;
beforeEach(() => {
  root = tmpDir('bfe-enc-');
});

describe('encodeBenchmark', () => {
  it.each(['float32', 'float16'] as const)(
    'writes four %s tables that read back consistently',
    async (dtype) => {
      const out = join(root, 'bank');
      const m = await encodeBenchmark(benchmark, fakeEncoder(), out, { dtype, chunkSize: 2 });
      expect(m.memories).toEqual({ rows: 3, tokens: 10, truncated: 0, withoutTokens: 0 });
      expect(m.queries).toEqual({ rows: 2, tokens: 3, truncated: 0, withoutTokens: 0 });
      const bank = await openBank(out);
      expect(bank.memories.ids).toEqual(['m1', 'm2', 'm3']);
      expect(bank.memories.bankIds).toEqual(['b1', 'b1', 'b2']);
      expect(Array.from(bank.memories.tokenOffsets)).toEqual([0, 6, 8, 10]);
      expect(Array.from(bank.queries.tokenId)).toEqual([9, 10, 4]); // the query prefix is not content
      const tol = dtype === 'float32' ? 1e-6 : 2e-3;
      for (const side of [bank.memories, bank.queries]) {
        for (let r = 0; r < side.tokenVectors.length / DIM; r++) {
          let ss = 0;
          for (let k = 0; k < DIM; k++) ss += side.tokenVectors[r * DIM + k]! ** 2;
          expect(Math.abs(Math.sqrt(ss) - 1)).toBeLessThan(tol);
        }
      }
      const table = tableFromIPC(readFileSync(join(out, 'memories.arrow')));
      expect(table.schema.metadata.get('bfe.dtype')).toBe(dtype);
      expect(table.schema.metadata.get('bfe.model_id')).toBe('test/fake');
      expect(String(table.schema.fields.find((f) => f.name === 'pooled')?.type)).toContain(
        dtype === 'float32' ? 'Float32' : 'Float16',
      );
    },
  );

  it('leaves nothing behind when the encoder fails mid-pass', async () => {
    const out = join(root, 'bank');
    await expect(encodeBenchmark(benchmark, fakeEncoder(1), out, { chunkSize: 1 })).rejects.toThrow(
      'device lost',
    );
    expect(readdirSync(root)).toEqual([]);
  });

  it('refuses labels and empty texts', async () => {
    const withLabels = { ...benchmark, labels: {} } as unknown as Benchmark;
    await expect(encodeBenchmark(withLabels, fakeEncoder(), join(root, 'b'))).rejects.toThrow(
      LabelLeakError,
    );
    const empty = { ...benchmark, memories: [{ id: 'm0', bankId: 'b', text: ' ', meta: {} }] };
    await expect(encodeBenchmark(empty, fakeEncoder(), join(root, 'b'))).rejects.toThrow(DataError);
  });
});

describe('openBank', () => {
  it('refuses a bank without its manifest, a truncated table, or a changed byte', async () => {
    const out = join(root, 'bank');
    await encodeBenchmark(benchmark, fakeEncoder(), out);
    const tokens = join(out, 'memory-tokens.arrow');
    const bytes = readFileSync(tokens);
    const at = bytes.length >> 1;
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(tokens, bytes);
    await expect(openBank(out)).rejects.toThrow(/SHA-256/);
    truncateSync(tokens, 100);
    await expect(openBank(out)).rejects.toThrow(ArtifactCorruptError);
    unlinkSync(join(out, 'bank.json'));
    await expect(openBank(out)).rejects.toThrow(DataMissingError);
  });
});

describe("openBank with memoryTokens: 'file'", () => {
  /** The layout's rows, read straight from the file and widened like the in-memory reader. */
  function rowsFromLayout(layout: VectorFileLayout): Float32Array {
    const file = readFileSync(layout.path);
    const width = layout.dtype === 'float32' ? 4 : 2;
    const out: number[] = [];
    for (const s of layout.segments) {
      for (let i = 0; i < s.rows * layout.dim; i++) {
        const at = s.offset + i * width;
        out.push(width === 4 ? file.readFloatLE(at) : halfToFloat(file.readUInt16LE(at)));
      }
    }
    return Float32Array.from(out);
  }

  it.each(['float32', 'float16'] as const)(
    'gives the same %s side without the vectors, and their exact place in the file',
    async (dtype) => {
      const out = join(root, 'bank');
      await encodeBenchmark(benchmark, fakeEncoder(), out, { dtype, chunkSize: 2 });
      const whole = await openBank(out);
      const streamed = await openBank(out, { memoryTokens: 'file' });
      expect('tokenVectors' in streamed.memories).toBe(false);
      const { tokenVectors, ...rest } = whole.memories;
      const { tokenFile, ...same } = streamed.memories;
      expect(same).toEqual(rest);
      expect(streamed.queries).toEqual(whole.queries);
      expect(tokenFile.dtype).toBe(dtype);
      expect(tokenFile.dim).toBe(DIM);
      expect(tokenFile.segments.map((s) => s.rows)).toEqual([8, 2]); // chunks of 2 memories
      expect(Array.from(rowsFromLayout(tokenFile))).toEqual(Array.from(tokenVectors));
    },
  );

  it('still checks the size and the SHA-256 of the file it does not load', async () => {
    const out = join(root, 'bank');
    await encodeBenchmark(benchmark, fakeEncoder(), out);
    const tokens = join(out, 'memory-tokens.arrow');
    const bytes = readFileSync(tokens);
    const at = bytes.length >> 1;
    bytes[at] = bytes[at]! ^ 0xff;
    writeFileSync(tokens, bytes);
    await expect(openBank(out, { memoryTokens: 'file' })).rejects.toThrow(/SHA-256/);
    // Without hashing, a changed byte in the vectors goes unseen, but a truncation does not.
    await expect(
      openBank(out, { memoryTokens: 'file', verifyHashes: false }),
    ).resolves.toBeDefined();
    truncateSync(tokens, bytes.length - 8);
    await expect(openBank(out, { memoryTokens: 'file', verifyHashes: false })).rejects.toThrow(
      /bytes, manifest says/,
    );
  });

  it('refuses a file whose footer or magic is damaged, naming it', async () => {
    const out = join(root, 'bank');
    await encodeBenchmark(benchmark, fakeEncoder(), out);
    const tokens = join(out, 'memory-tokens.arrow');
    const bytes = readFileSync(tokens);
    bytes[bytes.length - 1] = 0; // the trailing magic
    writeFileSync(tokens, bytes);
    await expect(readTokenFileColumns(tokens, 'memory_index', DIM)).rejects.toThrow(
      /memory-tokens\.arrow: not a complete Arrow IPC file/,
    );
    await expect(readTokenFileColumns(tokens, 'memory_index', DIM)).rejects.toThrow(
      ArtifactCorruptError,
    );
  });
});
