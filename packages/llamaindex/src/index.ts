export { BfeRetriever, EXCLUDED_METADATA_KEYS } from './retriever.js';
export { BfeServiceError } from '@bfe/client';
export type { HitMetadata, RetrieverOptions } from '@bfe/client';
