import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fsyncDirs, fsyncPath } from '@bfe/core';
import { isSafeRelativePath } from './fs-util.js';
import { inspectArtifact } from './inspect.js';
import { MANIFEST_FILE, cacheManifestSchema, type CacheManifest } from './key.js';
import {
  REMOTE_CACHE_AUTH,
  RemoteCacheError,
  canPublish,
  type RemoteCacheClient,
} from './remote-client.js';
import {
  RemoteArtifactRefused,
  parseIndex,
  signIndex,
  type RemoteIndex,
  type RemoteIndexBody,
} from './remote-index.js';
import { SIGNING_KEY_ENV, VERIFY_KEY_ENV } from './remote-signing.js';
import type { CacheEvent } from './types.js';

// One artifact on the team server: an index under the artifact's key and its bytes in parts,
// each part stored under its own SHA-256. The index carries the exact `artifact.json` text; the
// parts are the manifest's files concatenated in manifest order, cut every `chunkBytes` (so an
// artifact larger than the server's body limit travels in several requests, and a part the
// server already holds is not sent again, unless this client refused it as corrupt). A download
// is verified twice: every part against the SHA-256 it is named by, then the whole directory as
// a local hit is (manifest hashing to itself and to the key, every file's size and SHA-256).
// (Module-internal to src/cache.)

/** What an upload sent. */
export interface UploadReport {
  readonly bytes: number;
  readonly parts: number;
  /** Parts actually sent (the others the server already had). */
  readonly sent: number;
  readonly chunkBytes: number;
}

/**
 * Parts this client refused on download (their bytes did not hash to their name): its next
 * upload sends them again although the server holds a file under that name, so a part
 * corrupted on the server is repaired by the first client that computes the artifact instead
 * of being skipped (and refused) by every upload and download after it.
 */
const refusedParts = new WeakMap<RemoteCacheClient, Set<string>>();

function refusedBy(client: RemoteCacheClient): Set<string> {
  let set = refusedParts.get(client);
  if (set === undefined) refusedParts.set(client, (set = new Set()));
  return set;
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The manifest's files as one byte stream cut into parts of `chunkBytes`.
 * @throws Error when a file no longer has its manifest's size and SHA-256
 */
async function* readParts(
  dir: string,
  manifest: CacheManifest,
  chunkBytes: number,
): AsyncGenerator<Buffer> {
  let part = Buffer.allocUnsafe(chunkBytes);
  let fill = 0;
  for (const f of manifest.files) {
    const handle = await open(join(dir, f.path), 'r');
    // Each file is hashed as it is read: the index (sent last) goes up only when every file
    // still has the size and SHA-256 its manifest lists.
    const hash = createHash('sha256');
    let size = 0;
    try {
      for (;;) {
        const { bytesRead } = await handle.read(part, fill, chunkBytes - fill, null);
        if (bytesRead === 0) break;
        hash.update(part.subarray(fill, fill + bytesRead));
        size += bytesRead;
        fill += bytesRead;
        if (fill === chunkBytes) {
          yield part;
          part = Buffer.allocUnsafe(chunkBytes);
          fill = 0;
        }
      }
    } finally {
      await handle.close();
    }
    if (size !== f.bytes || hash.digest('hex') !== f.sha256) {
      throw new Error(`${join(dir, f.path)} no longer matches its manifest; not uploaded`);
    }
  }
  if (fill > 0) yield part.subarray(0, fill);
}

/**
 * @throws RemoteCacheError (REMOTE_CACHE_AUTH) on a reader: a machine with the publisher's
 *   public key but not its private key uploads nothing
 */
function assertPublisher(client: RemoteCacheClient): void {
  if (canPublish(client.config)) return;
  throw new RemoteCacheError(
    REMOTE_CACHE_AUTH,
    `This machine holds ${VERIFY_KEY_ENV} without ${SIGNING_KEY_ENV}: it reads the team cache and publishes nothing (readers refuse artifacts without the publisher's signature).`,
  );
}

/**
 * Uploads the artifact in `dir` (its files and `artifact.json`): parts first, the index last,
 * so an index never names a part the server lacks. On a 413 the parts are cut in half and the
 * upload starts again (down to 1 KiB).
 */
export async function uploadArtifact(
  client: RemoteCacheClient,
  dir: string,
  stage: string,
  key: string,
  manifestText: string,
): Promise<UploadReport> {
  assertPublisher(client);
  const manifest = cacheManifestSchema.parse(JSON.parse(manifestText));
  let chunkBytes = client.config.chunkBytes;
  for (;;) {
    const parts: Array<{ sha256: string; bytes: number }> = [];
    let sent = 0;
    let tooLarge = false;
    for await (const part of readParts(dir, manifest, chunkBytes)) {
      const id = sha256(part);
      parts.push({ sha256: id, bytes: part.length });
      const refused = refusedBy(client);
      if (!refused.has(id) && (await client.exists(id))) continue;
      if ((await client.put(id, part)) === 'too-large') {
        tooLarge = true;
        break;
      }
      refused.delete(id);
      sent++;
    }
    if (!tooLarge) {
      const body: RemoteIndexBody = {
        format: 'bfe-remote-artifact/1',
        stage,
        key,
        manifest: manifestText,
        parts,
      };
      const index = signIndex(body, client.config);
      const result = await client.put(key, Buffer.from(JSON.stringify(index)));
      if (result === 'ok') {
        const bytes = parts.reduce((s, p) => s + p.bytes, 0);
        return { bytes, parts: parts.length, sent, chunkBytes };
      }
    }
    if (chunkBytes <= 1024) throw new Error(`remote cache refuses even 1 KiB parts (HTTP 413)`);
    chunkBytes = Math.max(1024, Math.floor(chunkBytes / 2));
  }
}

/**
 * Downloads artifact `key` of `stage` into the empty directory `tmp`, verified; returns its
 * manifest, or undefined when the server does not hold it.
 * @throws RemoteArtifactRefused when anything does not check out (the caller computes instead)
 */
export async function downloadArtifact(
  client: RemoteCacheClient,
  stage: string,
  key: string,
  tmp: string,
): Promise<{ manifest: CacheManifest; bytes: number } | undefined> {
  const raw = await client.get(key);
  if (raw === undefined) return undefined;
  const index = parseIndex(raw, stage, key, client.config);
  let manifest: CacheManifest;
  try {
    manifest = cacheManifestSchema.parse(JSON.parse(index.manifest));
  } catch {
    throw new RemoteArtifactRefused('its artifact.json is not a valid manifest');
  }
  if (manifest.manifestSha256 === undefined) {
    throw new RemoteArtifactRefused('its artifact.json carries no manifestSha256');
  }
  const seen = new Set<string>();
  for (const f of manifest.files) {
    if (!isSafeRelativePath(f.path) || f.path === MANIFEST_FILE || seen.has(f.path)) {
      throw new RemoteArtifactRefused(`its manifest lists an invalid path '${f.path}'`);
    }
    seen.add(f.path);
  }
  const total = manifest.files.reduce((s, f) => s + f.bytes, 0);
  const partBytes = index.parts.reduce((s, p) => s + p.bytes, 0);
  if (total !== partBytes) {
    throw new RemoteArtifactRefused(`its parts hold ${partBytes} bytes, its files ${total}`);
  }
  await writeParts(client, index, manifest, tmp);
  for (const f of manifest.files) await fsyncPath(join(tmp, f.path));
  await writeFile(join(tmp, MANIFEST_FILE), index.manifest);
  await fsyncPath(join(tmp, MANIFEST_FILE));
  await fsyncDirs(tmp);
  // The same check as a local hit, every file hashed: the key, the manifest's own hash, sizes.
  const inspection = await inspectArtifact(tmp, stage, key, true);
  if (inspection.state !== 'ok') {
    const problems = inspection.state === 'corrupt' ? inspection.problems.join('; ') : 'missing';
    throw new RemoteArtifactRefused(problems.replaceAll(tmp, '<download>'));
  }
  return { manifest: inspection.manifest, bytes: total };
}

/** Streams the parts into the manifest's files, each part checked against its name. */
async function writeParts(
  client: RemoteCacheClient,
  index: RemoteIndex,
  manifest: CacheManifest,
  tmp: string,
): Promise<void> {
  let file = 0;
  let written = 0; // bytes of manifest.files[file] written so far
  let handle =
    manifest.files.length === 0 ? undefined : await openFile(tmp, manifest.files[0]!.path);
  try {
    for (const part of index.parts) {
      const bytes = await client.get(part.sha256);
      if (bytes === undefined) throw new RemoteArtifactRefused(`part ${part.sha256} is missing`);
      if (bytes.length !== part.bytes || sha256(bytes) !== part.sha256) {
        refusedBy(client).add(part.sha256);
        throw new RemoteArtifactRefused(`part ${part.sha256} does not hash to its name`);
      }
      let at = 0;
      while (at < bytes.length) {
        while (handle !== undefined && written === manifest.files[file]!.bytes) {
          await handle.close();
          file++;
          written = 0;
          handle =
            file < manifest.files.length
              ? await openFile(tmp, manifest.files[file]!.path)
              : undefined;
        }
        if (handle === undefined) throw new RemoteArtifactRefused('its parts run past its files');
        const n = Math.min(bytes.length - at, manifest.files[file]!.bytes - written);
        for (let done = 0; done < n;) {
          done += (await handle.write(bytes, at + done, n - done)).bytesWritten;
        }
        at += n;
        written += n;
      }
    }
    // Trailing empty files.
    while (handle !== undefined) {
      await handle.close();
      file++;
      handle =
        file < manifest.files.length ? await openFile(tmp, manifest.files[file]!.path) : undefined;
    }
  } finally {
    await handle?.close();
  }
}

/** Creates a listed file; a path that collides with another (a file where a folder goes) is refused. */
async function openFile(tmp: string, path: string) {
  const absolute = join(tmp, path);
  try {
    await mkdir(dirname(absolute), { recursive: true });
    return await open(absolute, 'wx');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
      throw new RemoteArtifactRefused(`its manifest lists colliding paths ('${path}')`);
    }
    throw error;
  }
}

/** What the remote tier needs of the store: its folders, its publish, its events. */
export interface RemoteTierHost {
  /** The team server; undefined: no remote tier (fetch and send do nothing). */
  readonly client: RemoteCacheClient | undefined;
  readonly tmpDir: string;
  readonly artifactDir: (stage: string, key: string) => string;
  /** Renames a finished directory into place; returns the manifest of one already there. */
  readonly publish: (stage: string, key: string, tmp: string) => Promise<CacheManifest | undefined>;
  readonly writing: <T>(op: () => Promise<T>) => Promise<T>;
  readonly emit: (event: CacheEvent) => void;
}

/**
 * A local miss from the team server (called under the key's lock): downloaded into `tmp/`,
 * verified (every part by its SHA-256, then the directory as a full local hit) and published;
 * undefined when the server lacks it or it was refused (a warning: the caller computes it).
 */
export async function fetchFromRemote(
  host: RemoteTierHost,
  stage: string,
  key: string,
): Promise<CacheManifest | undefined> {
  const client = host.client;
  if (client === undefined) return undefined;
  const tmp = await host.writing(() => mkdtemp(join(host.tmpDir, `${key}.${process.pid}.`)));
  try {
    const got = await downloadArtifact(client, stage, key, tmp);
    if (got === undefined) {
      await rm(tmp, { recursive: true, force: true });
      return undefined;
    }
    const stageDir = dirname(host.artifactDir(stage, key));
    await host.writing(() => mkdir(stageDir, { recursive: true }));
    const existing = await host.publish(stage, key, tmp);
    await fsyncPath(stageDir);
    host.emit({ kind: 'remote-hit', stage, key, bytes: got.bytes });
    return existing ?? got.manifest;
  } catch (error) {
    await rm(tmp, { recursive: true, force: true });
    if (!(error instanceof RemoteArtifactRefused)) throw error;
    const message = `Remote ${stage} artifact ${key.slice(0, 12)} refused: ${error.message}. Computing it locally.`;
    host.emit({ kind: 'warning', stage, key, message });
    return undefined;
  }
}

/** Sends a freshly computed artifact to the team server; a failure is a warning, not an error. */
export async function sendToRemote(
  host: RemoteTierHost,
  stage: string,
  key: string,
): Promise<void> {
  const client = host.client;
  // A reader (a publisher key without its private half) leaves publishing to those who hold it.
  if (client === undefined || !canPublish(client.config)) return;
  const dir = host.artifactDir(stage, key);
  try {
    const text = await readFile(join(dir, MANIFEST_FILE), 'utf8');
    const sent = await uploadArtifact(client, dir, stage, key, text);
    host.emit({ kind: 'uploaded', stage, key, ...sent });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    const message = `Could not upload ${stage} ${key.slice(0, 12)} to the remote cache: ${reason}`;
    host.emit({ kind: 'warning', stage, key, message });
  }
}

/** What {@link pushArtifacts} did. */
export interface PushReport {
  readonly checked: number;
  /** Artifacts the server already had. */
  readonly present: number;
  readonly uploaded: number;
  readonly bytes: number;
  /** Local artifacts that failed their full check (not uploaded). */
  readonly corrupt: readonly string[];
}

/**
 * Uploads every local artifact the team server lacks, each checked in full first (every file
 * hashed): for seeding a new team cache from a warm local one (`bfe cache push`).
 */
export async function pushArtifacts(
  client: RemoteCacheClient,
  artifacts: ReadonlyArray<{ readonly stage: string; readonly key: string; readonly dir: string }>,
  onProgress?: (done: number, total: number) => void,
): Promise<PushReport> {
  assertPublisher(client);
  let present = 0;
  let uploaded = 0;
  let bytes = 0;
  const corrupt: string[] = [];
  for (const [i, a] of artifacts.entries()) {
    if (await client.exists(a.key)) {
      present++;
    } else if ((await inspectArtifact(a.dir, a.stage, a.key, true)).state !== 'ok') {
      corrupt.push(a.dir);
    } else {
      const text = await readFile(join(a.dir, MANIFEST_FILE), 'utf8');
      bytes += (await uploadArtifact(client, a.dir, a.stage, a.key, text)).bytes;
      uploaded++;
    }
    onProgress?.(i + 1, artifacts.length);
  }
  return { checked: artifacts.length, present, uploaded, bytes, corrupt };
}
