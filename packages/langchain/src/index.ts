export { BfeRetriever } from './retriever.js';
export type { BfeRetrieverInput } from './retriever.js';
export { BfeServiceError } from '@bfe/client';
export type { HitMetadata } from '@bfe/client';
