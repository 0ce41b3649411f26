export {
  MILVUS_INDEX_TYPES,
  grpcAddress,
  milvusOptionsSchema,
  parseMilvusOptions,
} from './options.js';
export type { MilvusOptions, ResolvedMilvusOptions } from './options.js';
export {
  FIELDS,
  MAX_BANK_ID,
  MAX_MEMORY_ID,
  MilvusRequestError,
  TokenCollection,
} from './collection.js';
export type { MemoryRows, TokenHit } from './collection.js';
export { MILVUS_MARGIN, MILVUS_MAX_LIMIT, MilvusTokenIndex, memoryRows } from './milvus-index.js';
export type { MilvusSide, MilvusTokenIndexOptions } from './milvus-index.js';
