import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';

// The publisher key of the remote tier: an Ed25519 key pair apart from the access token. The
// machines allowed to publish (CI) hold the private half (`BFE_CACHE_SIGNING_KEY`) and sign
// every index they upload with it; readers hold the public half (`BFE_CACHE_VERIFY_KEY`) and
// then accept only indexes that key signed. The token's HMAC (remote-tier.ts) proves only that
// the writer held the token, which every reader holds too. (Module-internal to src/cache.)

/** The variable holding the private key of the machines allowed to publish. */
export const SIGNING_KEY_ENV = 'BFE_CACHE_SIGNING_KEY';
/** The variable holding the public key readers require signatures of. */
export const VERIFY_KEY_ENV = 'BFE_CACHE_VERIFY_KEY';

/** A machine's publisher keys: the public one always, the private one on a publisher. */
export interface PublisherKeys {
  /** Ed25519 private key: this machine signs what it uploads; absent on a reader. */
  readonly signingKey?: KeyObject;
  /** Ed25519 public key: a download must carry a valid signature by it. */
  readonly verifyKey: KeyObject;
  /** SHA-256 (hex) of the public key's SubjectPublicKeyInfo DER: names the key in an index. */
  readonly keyId: string;
}

/** The publisher's signature as an index carries it. */
export interface PublisherSignature {
  /** {@link PublisherKeys.keyId} of the key that signed. */
  readonly key: string;
  /** Ed25519 signature (base64) of the index's canonical JSON without its signatures. */
  readonly signature: string;
}

/** The id of a public key: SHA-256 of its DER SubjectPublicKeyInfo. */
export function publicKeyId(key: KeyObject): string {
  return createHash('sha256')
    .update(key.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/**
 * A key from a variable's value: PEM text, or the path of a PEM file.
 * @throws Error naming the variable when it is neither, or not an Ed25519 key of that kind
 */
function readKey(name: string, value: string, kind: 'private' | 'public'): KeyObject {
  let pem = value.trim();
  if (!pem.startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(pem, 'utf8');
    } catch (error) {
      throw new Error(`${name} is neither PEM text nor a readable file (${String(error)})`, {
        cause: error,
      });
    }
  }
  if (kind === 'public' && pem.includes('PRIVATE KEY')) {
    // createPublicKey would derive the public half, leaving the private key on a reader.
    throw new Error(`${name} holds a private key: give readers the public half only`);
  }
  let key: KeyObject;
  try {
    key = kind === 'private' ? createPrivateKey(pem) : createPublicKey(pem);
  } catch (error) {
    throw new Error(`${name} is not a ${kind} key in PEM form (${String(error)})`, {
      cause: error,
    });
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`${name} is a ${key.asymmetricKeyType ?? 'non-asymmetric'} key, not Ed25519`);
  }
  return key;
}

/**
 * The publisher keys from `BFE_CACHE_SIGNING_KEY` and `BFE_CACHE_VERIFY_KEY` (each PEM text or
 * a PEM file's path); undefined when neither is set. A signing key alone verifies with its own
 * public half; given both, they must be a pair.
 * @throws Error with a message naming the variable when a key is unusable or the two differ
 * @example publisherKeysFromEnv({ BFE_CACHE_VERIFY_KEY: '/etc/bfe/cache-verify.pem' })?.keyId
 */
export function publisherKeysFromEnv(env: NodeJS.ProcessEnv): PublisherKeys | undefined {
  const signing = env[SIGNING_KEY_ENV]?.trim() ?? '';
  const verifying = env[VERIFY_KEY_ENV]?.trim() ?? '';
  if (signing === '' && verifying === '') return undefined;
  const signingKey = signing === '' ? undefined : readKey(SIGNING_KEY_ENV, signing, 'private');
  const verifyKey =
    verifying === '' ? createPublicKey(signingKey!) : readKey(VERIFY_KEY_ENV, verifying, 'public');
  const keyId = publicKeyId(verifyKey);
  if (signingKey !== undefined && publicKeyId(createPublicKey(signingKey)) !== keyId) {
    throw new Error(`${SIGNING_KEY_ENV} is not the private half of ${VERIFY_KEY_ENV}`);
  }
  return signingKey === undefined ? { verifyKey, keyId } : { signingKey, verifyKey, keyId };
}

/** Signs `body` (an index's canonical JSON without its signatures) with the publisher's key. */
export function publisherSign(body: string, keys: PublisherKeys): PublisherSignature {
  if (keys.signingKey === undefined) {
    throw new Error(`no ${SIGNING_KEY_ENV}: this machine cannot publish`);
  }
  const signature = sign(null, Buffer.from(body), keys.signingKey).toString('base64');
  return { key: keys.keyId, signature };
}

/**
 * Why an index's publisher signature is not acceptable to a reader requiring `keys`, or
 * undefined when it is: present, by that key, and valid over `body`.
 */
export function publisherRefusal(
  body: string,
  publisher: PublisherSignature | undefined,
  keys: PublisherKeys,
): string | undefined {
  if (publisher === undefined) {
    return `it carries no publisher signature (signed with the access token alone), and this machine accepts only ${VERIFY_KEY_ENV}'s`;
  }
  if (publisher.key !== keys.keyId) {
    return `it is signed by publisher key ${publisher.key.slice(0, 12)}, not ${VERIFY_KEY_ENV}'s ${keys.keyId.slice(0, 12)}`;
  }
  const signature = Buffer.from(publisher.signature, 'base64');
  if (!verify(null, Buffer.from(body), keys.verifyKey, signature)) {
    return `its publisher signature does not verify with ${VERIFY_KEY_ENV}`;
  }
  return undefined;
}

/**
 * A new publisher key pair as PEM text (`bfe cache keygen`): the private half for the
 * machines allowed to publish, the public half for every reader.
 * @example const { signingPem, verifyPem, keyId } = generatePublisherKeys();
 */
export function generatePublisherKeys(): { signingPem: string; verifyPem: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    signingPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    verifyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: publicKeyId(publicKey),
  };
}
