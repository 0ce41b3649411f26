export {
  MILVUS_INDEX_TYPES,
  buildParams,
  grpcAddress,
  milvusOptionsSchema,
  milvusUrlOptions,
  parseMilvusOptions,
  searchParams,
} from './options.js';
export type { MilvusIndexType, MilvusOptions, ResolvedMilvusOptions } from './options.js';
export { MilvusRequestError, classifyError } from './errors.js';
export type { MilvusErrorCode } from './errors.js';
export { MILVUS_GRANTS } from './grants.js';
export { waitForIndex } from './index-build.js';
export { FIELDS, MAX_BANK_ID, MAX_MEMORY_ID, TokenCollection } from './collection.js';
export type { MemoryRows, TokenHit } from './collection.js';
export { MILVUS_MARGIN, MILVUS_MAX_LIMIT, MilvusTokenIndex, memoryRows } from './milvus-index.js';
export type { MilvusSide, MilvusTokenIndexOptions } from './milvus-index.js';
