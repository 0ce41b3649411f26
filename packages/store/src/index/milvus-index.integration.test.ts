import { afterAll, beforeAll, describe } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { milvusLiteForTests, startMilvusLite, type MilvusLite } from '@bfe/index-milvus/testing';
import { SparseScorer } from '@bfe/scorer';
import { storeCases } from './milvus-index.cases.js';

const python = await milvusLiteForTests();

describe.skipIf(python === undefined)('MemoryStore with index: milvus (Milvus Lite)', () => {
  const dataDir = suiteTmpDir('bfe-store-milvus-');
  let lite: MilvusLite;
  const scorer = SparseScorer.open({ kernel: 'js' });
  beforeAll(async () => {
    lite = await startMilvusLite({ dataDir: dataDir(), python: python! });
  });
  afterAll(async () => {
    await (await scorer).dispose();
    await lite?.stop();
  });
  storeCases(() => ({ address: lite.address }), scorer);
});
