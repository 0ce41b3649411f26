import { createHmac, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '@bfe/core';
import { z } from 'zod';
import type { RemoteCacheConfig } from './remote-client.js';
import { publisherRefusal, publisherSign } from './remote-signing.js';

// The index of one artifact on the team server and its signatures: the team key's HMAC (the
// token by default: it proves the writer holds what every reader holds) and, with a publisher
// key, the publisher's Ed25519 signature (it proves a machine allowed to publish wrote it).
// (Module-internal to src/cache.)

export const HEX64 = /^[0-9a-f]{64}$/;

/** The index object stored under an artifact's key. */
const remoteIndexSchema = z.strictObject({
  format: z.literal('bfe-remote-artifact/1'),
  stage: z.string(),
  key: z.string().regex(HEX64),
  /** The artifact's `artifact.json`, byte for byte. */
  manifest: z.string(),
  parts: z.array(
    z.strictObject({ sha256: z.string().regex(HEX64), bytes: z.number().int().positive() }),
  ),
  /** HMAC-SHA256 (hex) of the canonical JSON of the fields above, with the team's key. */
  signature: z.string().regex(HEX64),
  /** Ed25519 signature of the same JSON by the publisher key (`BFE_CACHE_SIGNING_KEY`). */
  publisher: z.strictObject({ key: z.string().regex(HEX64), signature: z.base64() }).optional(),
});
export type RemoteIndex = z.infer<typeof remoteIndexSchema>;
/** What an index says about the artifact: every field but the signatures. */
export type RemoteIndexBody = Omit<RemoteIndex, 'signature' | 'publisher'>;

/** Why a download was refused (it is then computed locally). */
export class RemoteArtifactRefused extends Error {}

function hmac(body: RemoteIndexBody, key: string): string {
  return createHmac('sha256', key).update(canonicalJson(body)).digest('hex');
}

/** The index of `body`, signed with the team key and, on a publisher, the publisher key. */
export function signIndex(body: RemoteIndexBody, config: RemoteCacheConfig): RemoteIndex {
  const index: RemoteIndex = { ...body, signature: hmac(body, config.signatureKey) };
  return config.publisher === undefined
    ? index
    : { ...index, publisher: publisherSign(canonicalJson(body), config.publisher) };
}

/**
 * The index stored under `key`, checked: its form, its stage and key, the team key's HMAC and,
 * where `config` has a publisher key, the publisher's signature.
 * @throws RemoteArtifactRefused naming what does not check out
 */
export function parseIndex(
  raw: Buffer,
  stage: string,
  key: string,
  config: RemoteCacheConfig,
): RemoteIndex {
  let index: RemoteIndex;
  try {
    index = remoteIndexSchema.parse(JSON.parse(raw.toString('utf8')));
  } catch {
    throw new RemoteArtifactRefused('its index is not a bfe remote artifact');
  }
  if (index.key !== key || index.stage !== stage) {
    throw new RemoteArtifactRefused(`its index names ${index.stage} ${index.key}`);
  }
  const { signature, publisher, ...body } = index;
  const expected = Buffer.from(hmac(body, config.signatureKey), 'hex');
  if (!timingSafeEqual(Buffer.from(signature, 'hex'), expected)) {
    throw new RemoteArtifactRefused(
      "its signature does not match this team's key (BFE_REMOTE_CACHE_SIGNATURE_KEY, else the token)",
    );
  }
  if (config.publisher !== undefined) {
    const refusal = publisherRefusal(canonicalJson(body), publisher, config.publisher);
    if (refusal !== undefined) throw new RemoteArtifactRefused(refusal);
  }
  return index;
}
