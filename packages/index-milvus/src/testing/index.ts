export {
  MILVUS_LITE_REQUIREMENTS,
  ensureMilvusLite,
  milvusLiteForTests,
  milvusLiteVenv,
  startMilvusLite,
} from './lite.js';
export type { MilvusLite } from './lite.js';
export {
  MILVUS_ROOT_TOKEN,
  MILVUS_SERVER_REQUIREMENTS,
  ensureMilvusServer,
  milvusServerForTests,
  milvusServerVenv,
  startMilvusServer,
} from './server.js';
export type { MilvusServer, MilvusServerOptions, MilvusServerTls } from './server.js';
export { TEST_TIMINGS, timingEdits } from './timings.js';
export type { MilvusTimings } from './timings.js';
