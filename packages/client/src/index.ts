export type { HybridWeights, SearchBackend, SearchQuery } from './types.js';
export { hitMetadata, openBackend, retrieverOptionsSchema, storeBackend } from './backend.js';
export type { BackendOptions, HitMetadata, RetrieverOptions, StoreLike } from './backend.js';
export { BfeServiceError, DEFAULT_TIMEOUT_MS, HttpBackend, httpOptionsSchema } from './http.js';
export type { HttpOptions } from './http.js';
