import { artifactManifestSchema, canonicalJson, contentHash } from '@bfe/core';
import { z } from 'zod';

/** A stage name becomes a directory name: one safe, lower-case path segment. */
export const STAGE_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/** A cache key: lower-case hex SHA-256. */
export const KEY_PATTERN = /^[0-9a-f]{64}$/;

/** The file in every artifact directory that describes it. */
export const MANIFEST_FILE = 'artifact.json';

/**
 * What identifies an artifact: the stage, the version of the stage's code, its config (any
 * JSON value) and its inputs, each named and given by its own key (an upstream artifact's key
 * or a content hash such as `benchmarkHash`).
 */
export const artifactSpecSchema = z.strictObject({
  stage: z.string().regex(STAGE_NAME_PATTERN, 'a lower-case name: a-z, 0-9, ".", "_", "-"'),
  version: z.string().min(1),
  config: z.unknown(),
  inputs: z.record(z.string().min(1), z.string().min(1)),
});

/** See {@link artifactSpecSchema}. */
export interface ArtifactSpec {
  readonly stage: string;
  readonly version: string;
  readonly config: unknown;
  readonly inputs: Readonly<Record<string, string>>;
}

/**
 * An artifact's manifest (`artifact.json`): core's {@link artifactManifestSchema} plus the
 * compute time in seconds, the metadata the compute function returned and its own hash.
 */
export const cacheManifestSchema = artifactManifestSchema.extend({
  seconds: z.number().nonnegative(),
  meta: z.record(z.string(), z.json()),
  /**
   * SHA-256 of the canonical JSON of every other field (see `manifestSha256`); absent in
   * manifests written before it existed, which are accepted as they are.
   */
  manifestSha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .optional(),
});

/** See {@link cacheManifestSchema}. */
export type CacheManifest = z.infer<typeof cacheManifestSchema>;

/** JSON metadata a compute function may return; stored as the manifest's `meta`. */
export type ArtifactMeta = CacheManifest['meta'];

/**
 * Checks an {@link ArtifactSpec}; a bad one is a programmer error (the caller builds specs
 * from already-validated config), so it throws a plain `Error`.
 */
export function parseArtifactSpec(spec: ArtifactSpec): ArtifactSpec {
  const parsed = artifactSpecSchema.safeParse(spec);
  if (!parsed.success) {
    throw new Error(`Invalid artifact spec:\n${z.prettifyError(parsed.error)}`);
  }
  // Fails on values JSON cannot hold (undefined, bigint, cycles), before anything is computed.
  canonicalJson(spec.config);
  return spec;
}

/**
 * The cache key of an artifact: SHA-256 (hex) of the canonical JSON of
 * `{ stage, version, config, inputs }` (core's `contentHash`: sorted keys, no whitespace), so
 * key order in `config` and `inputs` does not matter and any change of value does.
 *
 * @example
 * artifactKey({ stage: 'encode', version: '1', config: { dtype: 'float32' }, inputs: { data: h } });
 * // '3f1c…' (64 hex characters)
 */
export function artifactKey(spec: ArtifactSpec): string {
  const { stage, version, config, inputs } = parseArtifactSpec(spec);
  return contentHash({ stage, version, config, inputs });
}
