import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { xz } from '@napi-rs/lzma';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { DataMissingError, FetchError, HashMismatchError, bytesSha256 } from '@bfe/core';
import {
  dataLocationFromEnv,
  fetchOfficialFile,
  resolveOfficialFile,
  type OfficialFile,
} from './files.js';

const payload = new TextEncoder().encode(JSON.stringify([{ id: 1, text: 'hello' }]));
const packed = xz.compressSync(payload);

let root: string;
let mirror: string;
let dataDir: string;
beforeEach(() => {
  root = tmpDir('bfe-files-');
  mirror = join(root, 'mirror');
  dataDir = join(root, 'data');
  mkdirSync(mirror);
});

const plain: OfficialFile = {
  name: 'plain.json',
  sha256: bytesSha256(payload),
  urls: ['https://example.invalid/plain.json'],
  licence: 'test',
};
const compressed: OfficialFile = {
  name: 'packed.json.xz',
  sha256: bytesSha256(packed),
  unpacked: { name: 'packed.json', sha256: bytesSha256(payload) },
  urls: [],
  licence: 'test',
};
const noNetwork = (() => Promise.reject(new Error('offline'))) as typeof fetch;

describe('fetchOfficialFile', () => {
  it('copies from the mirror, verifies, and reuses the verified local copy', async () => {
    writeFileSync(join(mirror, 'plain.json'), payload);
    const first = await fetchOfficialFile(plain, { dataDir, mirror }, noNetwork);
    expect(first.from).toBe('mirror');
    expect(readFileSync(first.path)).toEqual(Buffer.from(payload));
    const second = await fetchOfficialFile(plain, { dataDir, mirror: undefined }, noNetwork);
    expect(second.from).toBe('local');
  });

  it('unpacks .xz files and verifies both hashes', async () => {
    writeFileSync(join(mirror, 'packed.json.xz'), packed);
    const r = await fetchOfficialFile(compressed, { dataDir, mirror }, noNetwork);
    expect(r.path.endsWith('packed.json')).toBe(true);
    expect(r.source).toEqual({ name: 'packed.json', sha256: bytesSha256(payload) });
    expect(JSON.parse(readFileSync(r.path, 'utf8'))).toEqual([{ id: 1, text: 'hello' }]);
  });

  it('rejects a mirrored file with the wrong hash and leaves nothing behind', async () => {
    writeFileSync(join(mirror, 'plain.json'), 'tampered');
    await expect(fetchOfficialFile(plain, { dataDir, mirror }, noNetwork)).rejects.toBeInstanceOf(
      HashMismatchError,
    );
    expect(readdirSync(root)).toEqual(['mirror']);
  });

  it('replaces a damaged local copy instead of reading it', async () => {
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, 'plain.json'), 'damaged');
    writeFileSync(join(mirror, 'plain.json'), payload);
    const r = await fetchOfficialFile(plain, { dataDir, mirror }, noNetwork);
    expect(r.from).toBe('mirror');
    expect(readFileSync(r.path)).toEqual(Buffer.from(payload));
  });

  it('downloads from the pinned address when there is no mirror', async () => {
    const fake = ((url: string) => {
      expect(url).toBe('https://example.invalid/plain.json');
      return Promise.resolve(new Response(payload));
    }) as typeof fetch;
    const r = await fetchOfficialFile(plain, { dataDir, mirror: undefined }, fake);
    expect(r.from).toBe('download');
  });

  it('says why when no source can deliver the file', async () => {
    const error = await fetchOfficialFile(compressed, { dataDir, mirror }, noNetwork).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    expect((error as FetchError).suggestion).toContain('BFE_DATA_MIRROR');
  });
});

describe('resolveOfficialFile', () => {
  it('names `bfe data fetch` when the data is missing and no mirror is set', async () => {
    const error = await resolveOfficialFile(plain, 'demo', { dataDir, mirror: undefined }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(DataMissingError);
    expect((error as DataMissingError).suggestion).toContain('bfe data fetch demo');
  });
});

describe('dataLocationFromEnv', () => {
  it('reads BFE_DATA_DIR and BFE_DATA_MIRROR, ignoring an empty mirror', () => {
    expect(dataLocationFromEnv({ BFE_DATA_DIR: '/x/data', BFE_DATA_MIRROR: '' })).toEqual({
      dataDir: '/x/data',
      mirror: undefined,
    });
    expect(dataLocationFromEnv({ XDG_CACHE_HOME: '/c', BFE_DATA_MIRROR: '/m' })).toEqual({
      dataDir: '/c/bfe/data',
      mirror: '/m',
    });
  });
});
