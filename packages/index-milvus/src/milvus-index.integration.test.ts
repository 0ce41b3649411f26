import { afterAll, beforeAll, describe } from 'vitest';
import { suiteTmpDir } from '@bfe/core/testing';
import { indexCases } from './milvus-index.cases.js';
import { milvusLiteForTests, startMilvusLite, type MilvusLite } from './testing/index.js';

const python = await milvusLiteForTests();

describe.skipIf(python === undefined)('MilvusTokenIndex on Milvus Lite', () => {
  const dataDir = suiteTmpDir('bfe-milvus-');
  let lite: MilvusLite;
  beforeAll(async () => {
    lite = await startMilvusLite({ dataDir: dataDir(), python: python! });
  });
  afterAll(async () => {
    await lite?.stop();
  });
  indexCases(() => ({ address: lite.address }), ['HNSW', 'IVF_FLAT']);
});
