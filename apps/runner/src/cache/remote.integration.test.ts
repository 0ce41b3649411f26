import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesSha256 } from '@bfe/core';
import { suiteTmpDir, tmpDir } from '@bfe/core/testing';
import { artifactKey, cacheManifestSchema, type ArtifactSpec, type CacheManifest } from './key.js';
import { manifestSha256 } from './manifest.js';
import { RemoteCacheClient, RemoteCacheError, remoteCacheFromEnv } from './remote-client.js';
import type { RemoteIndex } from './remote-index.js';
import { generatePublisherKeys } from './remote-signing.js';
import { ArtifactStore } from './store.js';
import { startCacheServer, type TestCacheServer } from './testing/cache-server.js';
import type { CacheEvent, ComputeFn } from './types.js';

// The remote tier against a real `turborepo-remote-cache` (tools/cache-serve.mjs) on
// 127.0.0.1: two stores with empty local caches share one server. The server's body limit is
// 64 KiB, so the 300 KB artifact below travels in parts.

const BODY_LIMIT = 64 * 1024;
let server: TestCacheServer;
let storage: string;
const storageRoot = suiteTmpDir('bfe-team-cache-');

beforeAll(async () => {
  storage = storageRoot();
  server = await startCacheServer({ storage, bodyLimit: BODY_LIMIT });
}, 90_000);
afterAll(async () => {
  await server?.stop();
});

const big = randomBytes(300_000);

/** The server's variables, with parts under its limit (the first test starts above it). */
const clientEnv = () => ({ ...server.env, BFE_REMOTE_CACHE_CHUNK_BYTES: String(48 * 1024) });

function spec(name: string): ArtifactSpec {
  return { stage: 'encode', version: '1', config: { name }, inputs: { data: 'd'.repeat(64) } };
}

/** A compute that counts its calls; `bytes` is the bank file's content (default `big`). */
function counting(bytes: Buffer = big): { calls: () => number; compute: ComputeFn } {
  let n = 0;
  return {
    calls: () => n,
    compute: async (dir) => {
      n += 1;
      await mkdir(join(dir, 'bank'));
      await writeFile(join(dir, 'bank', 'vectors.bin'), bytes);
      await writeFile(join(dir, 'results.json'), '{"recall@10":0.5}\n');
      await writeFile(join(dir, 'empty.txt'), '');
      return { rows: 2 };
    },
  };
}

async function openStore(env: Record<string, string> = {}) {
  const list: CacheEvent[] = [];
  const config = remoteCacheFromEnv({ ...clientEnv(), ...env });
  const remote = new RemoteCacheClient(config!);
  await remote.preflight();
  const store = await ArtifactStore.open({
    root: tmpDir('bfe-cache-'),
    remote,
    onEvent: (e) => list.push(e),
    exitOnSignal: false,
  });
  return { store, events: list };
}

/**
 * Each file's SHA-256: equal lists mean byte-identical files. (Not the bytes themselves: vitest's
 * deep equality walks a 300 KB Buffer element by element, measured at 17 s on a loaded machine,
 * which pushed this file's tests towards their timeouts.)
 */
const files = (dir: string) =>
  ['bank/vectors.bin', 'results.json', 'empty.txt'].map((f) =>
    bytesSha256(readFileSync(join(dir, f))),
  );

/** Every file the server stores for the team, by id. */
function stored(): Map<string, string> {
  const dir = join(storage, server.team);
  if (!existsSync(dir)) return new Map(); // nothing uploaded yet
  return new Map(readdirSync(dir).map((id) => [id, join(dir, id)]));
}

describe('remote tier', () => {
  it('a second store with an empty cache gets the artifact from the server, byte for byte', async () => {
    const a = await openStore({ BFE_REMOTE_CACHE_CHUNK_BYTES: String(1 << 20) });
    const made = counting();
    const first = await a.store.getOrCreate(spec('share'), made.compute);
    expect(first.source).toBe('computed');
    const uploaded = a.events.find((e) => e.kind === 'uploaded');
    // 1 MiB parts exceed the 64 KiB body limit: the 413 halves them until they pass.
    expect(uploaded).toMatchObject({ kind: 'uploaded', stage: 'encode' });
    if (uploaded?.kind !== 'uploaded') throw new Error('no upload');
    expect(uploaded.parts).toBeGreaterThan(300_000 / BODY_LIMIT);
    for (const size of [...stored().values()].map((p) => statSync(p).size)) {
      expect(size).toBeLessThanOrEqual(BODY_LIMIT);
    }

    const b = await openStore();
    const other = counting();
    const second = await b.store.getOrCreate(spec('share'), other.compute);
    expect(other.calls()).toBe(0);
    expect(second.source).toBe('remote');
    expect(second.cached).toBe(true);
    expect(b.events.map((e) => e.kind)).toContain('remote-hit');
    expect(files(second.dir)).toEqual(files(first.dir));
    expect(readFileSync(join(second.dir, 'artifact.json'))).toEqual(
      readFileSync(join(first.dir, 'artifact.json')),
    );
    // Now local: the next call is a local hit.
    expect((await b.store.getOrCreate(spec('share'), other.compute)).source).toBe('local');
  }, 120_000);

  it('refuses a corrupt part, computes instead, and the upload after it repairs the part', async () => {
    // Bytes of its own: parts are shared by content, and a part of `big` corrupted here would
    // be refused in every later test that needs it (the 32 KiB and 48 KiB cuts of `big` share
    // their last part) — which made the push test below fail about once in six runs.
    const own = randomBytes(300_000);
    const a = await openStore({ BFE_REMOTE_CACHE_CHUNK_BYTES: String(32 * 1024) });
    const before = new Set(stored().keys());
    await a.store.getOrCreate(spec('corrupt-part'), counting(own).compute);
    const parts = [...stored()].filter(
      ([id]) => !before.has(id) && id !== artifactKey(spec('corrupt-part')),
    );
    expect(parts.length).toBeGreaterThan(1);
    const [, path] = parts[0]!;
    const bytes = readFileSync(path);
    bytes[10] = bytes[10]! ^ 0xff; // same size, one bit pattern changed
    writeFileSync(path, bytes);

    const b = await openStore({ BFE_REMOTE_CACHE_CHUNK_BYTES: String(32 * 1024) });
    const again = counting(own);
    const got = await b.store.getOrCreate(spec('corrupt-part'), again.compute);
    expect(again.calls()).toBe(1);
    expect(got.source).toBe('computed');
    const warning = b.events.find((e) => e.kind === 'warning');
    expect(warning?.kind === 'warning' && warning.message).toMatch(
      /refused: part .* does not hash/,
    );
    // b computed the same bytes and uploaded them: the part it refused is sent again even
    // though the server holds a file under its name, so the next store gets it whole.
    expect(bytesSha256(readFileSync(path))).toBe(parts[0]![0]);
    const c = await openStore();
    const third = counting(own);
    expect((await c.store.getOrCreate(spec('corrupt-part'), third.compute)).source).toBe('remote');
    expect(third.calls()).toBe(0);
  }, 120_000);

  it('refuses a forged index (another results file, a planted labels file) that is not signed with the team key', async () => {
    const a = await openStore();
    const s = spec('forged');
    const key = artifactKey(s);
    const real = await a.store.getOrCreate(s, counting().compute);
    // The forger rewrites the index with a self-consistent manifest (the files' real hashes,
    // manifestSha256 recomputed: it passes every check but the signature), signed with a key
    // of its own.
    const forger = new RemoteCacheClient({
      ...remoteCacheFromEnv(clientEnv())!,
      signatureKey: 'not-the-team-key',
    });
    const dir = tmpDir('bfe-forge-');
    const fake = '{"recall@10":0.99}\n';
    writeFileSync(join(dir, 'results.json'), fake);
    const manifest = cacheManifestSchema.parse(
      JSON.parse(readFileSync(join(real.dir, 'artifact.json'), 'utf8')),
    );
    const labels = '{"q1":["m1"]}';
    writeFileSync(join(dir, 'labels.json'), labels);
    const forged: CacheManifest = {
      ...manifest,
      files: [
        { path: 'labels.json', bytes: labels.length, sha256: bytesSha256(Buffer.from(labels)) },
        { path: 'results.json', bytes: fake.length, sha256: bytesSha256(Buffer.from(fake)) },
      ],
    };
    delete forged.manifestSha256;
    forged.manifestSha256 = manifestSha256(forged);
    const { uploadArtifact } = await import('./remote-tier.js');
    await uploadArtifact(forger, dir, 'encode', key, JSON.stringify(forged, null, 2));

    const b = await openStore();
    const again = counting();
    const got = await b.store.getOrCreate(s, again.compute);
    expect(again.calls()).toBe(1);
    expect(readFileSync(join(got.dir, 'results.json'), 'utf8')).toBe('{"recall@10":0.5}\n');
    const warning = b.events.find((e) => e.kind === 'warning');
    expect(warning?.kind === 'warning' && warning.message).toMatch(/signature does not match/);

    // The control: the same forgery signed with the team's key passes every check. The key is
    // what stands between the server's storage and the results (the trust model, documented).
    const insider = new RemoteCacheClient(remoteCacheFromEnv(clientEnv())!);
    await uploadArtifact(insider, dir, 'encode', key, JSON.stringify(forged, null, 2));
    const c = await openStore();
    const planted = await c.store.getOrCreate(s, counting().compute);
    expect(planted.source).toBe('remote');
    expect(readFileSync(join(planted.dir, 'results.json'), 'utf8')).toBe(fake);
  }, 120_000);

  it('with a publisher key, readers accept only its signatures: an artifact published with the access token alone is refused', async () => {
    const pair = generatePublisherKeys();
    const publisher = { BFE_CACHE_SIGNING_KEY: pair.signingPem };
    const reader = { BFE_CACHE_VERIFY_KEY: pair.verifyPem };
    // The machine that holds the signing key (CI) publishes; a reader gets the artifact.
    const ci = await openStore(publisher);
    await ci.store.getOrCreate(spec('publisher-signed'), counting().compute);
    expect(ci.events.map((e) => e.kind)).toContain('uploaded');
    const first = await openStore(reader);
    const none = counting();
    expect((await first.store.getOrCreate(spec('publisher-signed'), none.compute)).source).toBe(
      'remote',
    );
    expect(none.calls()).toBe(0);

    // A machine holding only the access token publishes an artifact: its index carries the
    // token's signature alone. A reader requiring the signing key refuses it, computes the
    // artifact itself and uploads nothing.
    const member = await openStore();
    await member.store.getOrCreate(spec('token-only'), counting().compute);
    const second = await openStore(reader);
    const computed = counting();
    const got = await second.store.getOrCreate(spec('token-only'), computed.compute);
    expect(got.source).toBe('computed');
    expect(computed.calls()).toBe(1);
    const warning = second.events.find((e) => e.kind === 'warning');
    expect(warning?.kind === 'warning' && warning.message).toMatch(
      /refused: it carries no publisher signature \(signed with the access token alone\)/,
    );
    expect(second.events.map((e) => e.kind)).not.toContain('uploaded');
    // The control: a machine without the publisher key accepts the same artifact.
    const open = await openStore();
    expect((await open.store.getOrCreate(spec('token-only'), counting().compute)).source).toBe(
      'remote',
    );

    // A token holder edits the signed index, signs it again with the token and keeps the
    // publisher's signature: the signature no longer matches what the index says.
    const client = new RemoteCacheClient(remoteCacheFromEnv(clientEnv())!);
    const key = artifactKey(spec('publisher-signed'));
    const signed = JSON.parse((await client.get(key))!.toString('utf8')) as RemoteIndex;
    const { format, stage, parts } = signed;
    const edited = { format, stage, key, parts, manifest: `${signed.manifest}\n` };
    const { signIndex } = await import('./remote-index.js');
    const forged = { ...signIndex(edited, client.config), publisher: signed.publisher };
    await client.put(key, Buffer.from(JSON.stringify(forged)));
    const third = await openStore(reader);
    const redone = counting();
    expect((await third.store.getOrCreate(spec('publisher-signed'), redone.compute)).source).toBe(
      'computed',
    );
    const refused = third.events.find((e) => e.kind === 'warning');
    expect(refused?.kind === 'warning' && refused.message).toMatch(
      /publisher signature does not verify/,
    );
  }, 120_000);

  it('bfe cache push seeds the server from a warm local cache, and never uploads a corrupt artifact', async () => {
    const client = new RemoteCacheClient(remoteCacheFromEnv(clientEnv())!);
    const local = await ArtifactStore.open({ root: tmpDir('bfe-cache-'), exitOnSignal: false });
    const good = await local.getOrCreate(spec('push-good'), counting().compute);
    const bad = await local.getOrCreate(spec('push-bad'), counting().compute);
    const path = join(bad.dir, 'results.json');
    writeFileSync(path, readFileSync(path, 'utf8').replace('0.5', '0.9')); // same size
    const { pushArtifacts, uploadArtifact } = await import('./remote-tier.js');
    await expect(
      uploadArtifact(
        client,
        bad.dir,
        'encode',
        bad.key,
        readFileSync(join(bad.dir, 'artifact.json'), 'utf8'),
      ),
    ).rejects.toThrow(/no longer matches its manifest/);

    const first = await pushArtifacts(client, await local.list());
    expect(first).toMatchObject({ checked: 2, present: 0, uploaded: 1, corrupt: [bad.dir] });
    const again = await pushArtifacts(client, await local.list());
    expect(again).toMatchObject({ present: 1, uploaded: 0 });

    const b = await openStore();
    const none = counting();
    const got = await b.store.getOrCreate(spec('push-good'), none.compute);
    expect(none.calls()).toBe(0);
    expect(got.source).toBe('remote');
    expect(files(got.dir)).toEqual(files(good.dir));
    const other = counting();
    expect((await b.store.getOrCreate(spec('push-bad'), other.compute)).source).toBe('computed');
  }, 120_000);

  it('reports a wrong or missing token loudly instead of missing silently', async () => {
    const wrong = new RemoteCacheClient(
      remoteCacheFromEnv({ ...server.env, TURBO_TOKEN: 'wrong' })!,
    );
    await expect(wrong.preflight()).rejects.toMatchObject({ code: 'REMOTE_CACHE_AUTH' });
    await expect(wrong.preflight()).rejects.toBeInstanceOf(RemoteCacheError);
    expect(() => remoteCacheFromEnv({ TURBO_API: server.api, TURBO_TEAM: 't' })).toThrow(
      /TURBO_TOKEN is unset/,
    );
    expect(() => remoteCacheFromEnv({ TURBO_API: server.api, TURBO_TOKEN: 't' })).toThrow(
      /TURBO_TEAM is unset/,
    );
    expect(remoteCacheFromEnv({ ...server.env, BFE_REMOTE_CACHE: 'off' })).toBeUndefined();
    const gone = new RemoteCacheClient(
      remoteCacheFromEnv({ ...server.env, TURBO_API: 'http://127.0.0.1:9' })!,
    );
    await expect(gone.preflight()).rejects.toMatchObject({ code: 'REMOTE_CACHE_UNAVAILABLE' });
  }, 60_000);
});
