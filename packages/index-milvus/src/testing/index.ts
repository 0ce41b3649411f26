export {
  MILVUS_LITE_REQUIREMENTS,
  ensureMilvusLite,
  milvusLiteForTests,
  milvusLiteVenv,
  startMilvusLite,
} from './lite.js';
export type { MilvusLite } from './lite.js';
