import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { RemoteCacheClient, canPublish, remoteCacheFromEnv } from './remote-client.js';
import {
  generatePublisherKeys,
  publisherKeysFromEnv,
  publisherRefusal,
  publisherSign,
} from './remote-signing.js';
import { pushArtifacts } from './remote-tier.js';

const server = { TURBO_API: 'http://127.0.0.1:9', TURBO_TOKEN: 'token', TURBO_TEAM: 'bfe' };
const body = '{"format":"bfe-remote-artifact/1","key":"aa","parts":[]}';

describe('publisher keys', () => {
  it('reads PEM text or a PEM file; a signing key alone verifies with its own public half', () => {
    const pair = generatePublisherKeys();
    const dir = tmpDir('bfe-keys-');
    writeFileSync(join(dir, 'verify.pem'), pair.verifyPem);
    const publisher = publisherKeysFromEnv({ BFE_CACHE_SIGNING_KEY: pair.signingPem })!;
    const reader = publisherKeysFromEnv({ BFE_CACHE_VERIFY_KEY: join(dir, 'verify.pem') })!;
    expect([publisher.keyId, reader.keyId]).toEqual([pair.keyId, pair.keyId]);
    expect(publisher.signingKey).toBeDefined();
    expect(reader.signingKey).toBeUndefined();
    expect(publisherKeysFromEnv({})).toBeUndefined();
    const both = { BFE_CACHE_SIGNING_KEY: pair.signingPem, BFE_CACHE_VERIFY_KEY: pair.verifyPem };
    expect(publisherKeysFromEnv(both)?.keyId).toBe(pair.keyId);
  });

  it('accepts its own signature and refuses none, another key’s, and an edited body', () => {
    const pair = generatePublisherKeys();
    const publisher = publisherKeysFromEnv({ BFE_CACHE_SIGNING_KEY: pair.signingPem })!;
    const reader = publisherKeysFromEnv({ BFE_CACHE_VERIFY_KEY: pair.verifyPem })!;
    const signed = publisherSign(body, publisher);
    expect(publisherRefusal(body, signed, reader)).toBeUndefined();
    expect(publisherRefusal(body, undefined, reader)).toMatch(
      /no publisher signature \(signed with the access token alone\)/,
    );
    const other = publisherKeysFromEnv({
      BFE_CACHE_SIGNING_KEY: generatePublisherKeys().signingPem,
    })!;
    expect(publisherRefusal(body, publisherSign(body, other), reader)).toMatch(
      /signed by publisher key \w+, not BFE_CACHE_VERIFY_KEY's/,
    );
    // The right key id on a signature of another body (a token holder editing a signed index).
    expect(publisherRefusal(body.replace('aa', 'ab'), signed, reader)).toMatch(/does not verify/);
    expect(() => publisherSign(body, reader)).toThrow(/no BFE_CACHE_SIGNING_KEY/);
  });

  it('refuses unusable keys by name, through remoteCacheFromEnv as REMOTE_CACHE_AUTH', () => {
    const a = generatePublisherKeys();
    const b = generatePublisherKeys();
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .privateKey.export({ type: 'pkcs8', format: 'pem' })
      .toString();
    const cases: Array<[Record<string, string>, RegExp]> = [
      [
        { BFE_CACHE_SIGNING_KEY: a.signingPem, BFE_CACHE_VERIFY_KEY: b.verifyPem },
        /not the private half/,
      ],
      [{ BFE_CACHE_SIGNING_KEY: rsa }, /BFE_CACHE_SIGNING_KEY is a rsa key, not Ed25519/],
      [{ BFE_CACHE_VERIFY_KEY: a.signingPem }, /BFE_CACHE_VERIFY_KEY holds a private key/],
      [{ BFE_CACHE_VERIFY_KEY: 'not a key' }, /neither PEM text nor a readable file/],
      [
        { BFE_CACHE_VERIFY_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' },
        /BFE_CACHE_VERIFY_KEY is not a public key in PEM form/,
      ],
      [{ BFE_CACHE_VERIFY_KEY: '/nonexistent/verify.pem' }, /neither PEM text nor a readable file/],
    ];
    for (const [env, message] of cases) {
      expect(() => remoteCacheFromEnv({ ...server, ...env })).toThrow(message);
      expect(() => remoteCacheFromEnv({ ...server, ...env })).toThrow(
        expect.objectContaining({ code: 'REMOTE_CACHE_AUTH' }),
      );
    }
  });

  it('a machine publishes without a publisher key or with its private half, never as a reader', async () => {
    const pair = generatePublisherKeys();
    expect(canPublish(remoteCacheFromEnv(server)!)).toBe(true);
    expect(
      canPublish(remoteCacheFromEnv({ ...server, BFE_CACHE_SIGNING_KEY: pair.signingPem })!),
    ).toBe(true);
    const reader = remoteCacheFromEnv({ ...server, BFE_CACHE_VERIFY_KEY: pair.verifyPem })!;
    expect(canPublish(reader)).toBe(false);
    // `bfe cache push` on a reader stops before it asks the server anything.
    await expect(pushArtifacts(new RemoteCacheClient(reader), [])).rejects.toMatchObject({
      code: 'REMOTE_CACHE_AUTH',
      message: expect.stringMatching(/holds BFE_CACHE_VERIFY_KEY without BFE_CACHE_SIGNING_KEY/),
    });
  });
});
