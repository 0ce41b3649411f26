import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { ExactTokenIndex, JsSimilarityKernel, flatTokenStore } from '@bfe/index';
import { rng, unitVectors } from '@bfe/index/testing';
import { MilvusTokenIndex, TokenCollection } from '@bfe/index-milvus';
import {
  milvusServerForTests,
  startMilvusServer,
  TEST_TIMINGS,
  type MilvusServer,
} from '@bfe/index-milvus/testing';
import { indexSectionSchema } from '../sections/token-index.js';
import { milvusKeyConfig, openMilvusIndex, type MilvusBank } from './index-milvus.js';

const python = await milvusServerForTests();
const DIM = 16;

/** 3 conversations × 8 memories of 2..5 tokens, as an encoded bank holds them. */
function bank(): MilvusBank & { vectors: Float32Array } {
  const random = rng(3);
  const rows = 24;
  const tokenOffsets = new Int32Array(rows + 1);
  for (let m = 0; m < rows; m++) tokenOffsets[m + 1] = tokenOffsets[m]! + 2 + (m % 4);
  const vectors = unitVectors(tokenOffsets[rows]!, DIM, random);
  return {
    dim: DIM,
    vectors,
    memories: {
      ids: Array.from({ length: rows }, (_, m) => `conv-${m % 3}:D${m}`),
      bankIds: Array.from({ length: rows }, (_, m) => `conv-${m % 3}`),
      tokenOffsets,
      tokenVectors: vectors,
    },
  };
}

describe('index.backend milvus in the experiment file', () => {
  it('needs its URL and the fp32 codec; the URL query sets the index', async () => {
    expect(
      indexSectionSchema.parse({ backend: 'milvus', milvus: 'milvus://h:1?index=HNSW' }),
    ).toMatchObject({ backend: 'milvus', milvus: 'milvus://h:1?index=HNSW' });
    expect(indexSectionSchema.safeParse({ backend: 'milvus' }).success).toBe(false);
    const sq8 = { backend: 'milvus', milvus: 'milvus://h:1', codec: 'sq8' };
    expect(indexSectionSchema.safeParse(sq8).success).toBe(false);
    expect(indexSectionSchema.safeParse({ backend: 'milvus', milvus: 'h:1' }).success).toBe(false);
    // The key: the index and its parameters, never the address.
    expect(await milvusKeyConfig('milvus://a:1?index=IVF_SQ8&nprobe=8')).toEqual(
      await milvusKeyConfig('https://b:2?index=IVF_SQ8&nprobe=8'),
    );
    expect(await milvusKeyConfig('milvus://a:1?index=HNSW&ef=64')).not.toEqual(
      await milvusKeyConfig('milvus://a:1?index=HNSW&ef=128'),
    );
  });
});

describe.skipIf(python === undefined)('index.backend milvus on the Milvus 2.3.5 server', () => {
  const dataDir = suiteTmpDir('bfe-runner-milvus-');
  let server: MilvusServer;
  const token = process.env.BFE_MILVUS_TOKEN;
  beforeAll(async () => {
    server = await startMilvusServer({
      dataDir: dataDir(),
      python: python!,
      timings: TEST_TIMINGS,
    });
    process.env.BFE_MILVUS_TOKEN = server.token!;
  }, 300_000);
  afterAll(async () => {
    if (token === undefined) delete process.env.BFE_MILVUS_TOKEN;
    else process.env.BFE_MILVUS_TOKEN = token;
    await server?.stop();
  });

  it('fills a collection named from the encode key once, and searches as the exact backend (FLAT)', async () => {
    const b = bank();
    const kernel = new JsSimilarityKernel();
    const url = `milvus://${server.address}`;
    const exact = new ExactTokenIndex(
      {
        tokens: flatTokenStore(b.vectors, DIM),
        tokenOffsets: b.memories.tokenOffsets,
        ids: b.memories.ids,
      },
      kernel,
    );
    const q = unitVectors(5, DIM, rng(4));
    const memories = Int32Array.from({ length: 8 }, (_, i) => 3 * i + 1); // conversation 1
    const first = await openMilvusIndex(url, 'encode-key-a', b, kernel);
    const hits = await first.index.search(q, 5, 6, { memories });
    const want = await exact.search(q, 5, 6, { memories });
    expect(Array.from(hits.tokens)).toEqual(Array.from(want.tokens));
    expect(Array.from(hits.values)).toEqual(Array.from(want.values));
    first.dispose();
    // Opened again: the collection already holds the bank (its row count), nothing is inserted.
    const again = await openMilvusIndex(url, 'encode-key-a', b, kernel);
    expect(again.index).toBeInstanceOf(MilvusTokenIndex);
    const name = (again.index as MilvusTokenIndex).collection.name;
    const c = await TokenCollection.open(
      { address: server.address, token: server.token!, collection: name },
      DIM,
    );
    expect(await c.count()).toBe(b.memories.tokenOffsets[24]);
    expect(c.name).toMatch(/^bfe_run_[0-9a-f]{24}$/);
    const same = await again.index.search(q, 5, 6, { memories });
    expect(Array.from(same.tokens)).toEqual(Array.from(want.tokens));
    again.dispose();
    // Another encode: another collection.
    const other = await openMilvusIndex(url, 'encode-key-b', b, kernel);
    expect((other.index as MilvusTokenIndex).collection.name).not.toBe(name);
    other.dispose();
    await c.close();
  }, 120_000);
});
