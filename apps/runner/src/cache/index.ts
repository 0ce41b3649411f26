export { ArtifactStore } from './store.js';
export { CACHE_DIR_ENV, DEFAULT_CACHE_DIR, DEFAULT_STALE_MS, resolveCacheRoot } from './types.js';
export type {
  ArtifactEntry,
  ArtifactResult,
  ArtifactStoreOptions,
  CacheEvent,
  CacheRootOptions,
  ComputeContext,
  ComputeFn,
  CorruptArtifact,
  GcItem,
  GcOptions,
  GcReport,
  GetOrCreateOptions,
  VerifyOptions,
  VerifyReport,
} from './types.js';
export {
  KEY_PATTERN,
  MANIFEST_FILE,
  STAGE_NAME_PATTERN,
  artifactKey,
  artifactSpecSchema,
  cacheManifestSchema,
} from './key.js';
export type { ArtifactMeta, ArtifactSpec, CacheManifest } from './key.js';
export { CACHE_UNWRITABLE, CacheUnwritableError } from './errors.js';
export { installSignalCleanup } from './signals.js';
export { isPidAlive } from './locks.js';
export {
  DEFAULT_CHUNK_BYTES,
  REMOTE_CACHE_AUTH,
  REMOTE_CACHE_UNAVAILABLE,
  RemoteCacheClient,
  RemoteCacheError,
  remoteCacheFromEnv,
} from './remote-client.js';
export type { RemoteCacheConfig } from './remote-client.js';
export { pushArtifacts } from './remote-tier.js';
export { SIGNING_KEY_ENV, VERIFY_KEY_ENV, generatePublisherKeys } from './remote-signing.js';
export type { PublisherKeys } from './remote-signing.js';
export type { PushReport } from './remote-tier.js';
