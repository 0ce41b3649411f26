import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { tmpDir } from './testing/index.js';
import { RecordHasher, bytesSha256, canonicalJson, contentHash, fileSha256 } from './hash.js';

describe('contentHash', () => {
  it('ignores key order at every depth', () => {
    expect(contentHash({ b: 1, a: { y: [1, 2], x: 'z' } })).toBe(
      contentHash({ a: { x: 'z', y: [1, 2] }, b: 1 }),
    );
  });

  it('distinguishes array order and values', () => {
    expect(contentHash([1, 2])).not.toBe(contentHash([2, 1]));
    expect(contentHash({ a: 1 })).not.toBe(contentHash({ a: '1' }));
  });

  it('is a pure function of the JSON value (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const roundTripped: unknown = JSON.parse(JSON.stringify(v));
        expect(contentHash(roundTripped)).toBe(contentHash(v));
      }),
    );
  });

  it('produces sorted, whitespace-free canonical JSON', () => {
    expect(canonicalJson({ b: [1, { d: 2, c: 3 }], a: null })).toBe(
      '{"a":null,"b":[1,{"c":3,"d":2}]}',
    );
  });

  it('refuses values JSON cannot hold instead of hashing a placeholder', () => {
    expect(() => canonicalJson({ f: () => 1 })).toThrow();
    expect(() => canonicalJson(10n)).toThrow();
  });
});

describe('RecordHasher', () => {
  it('hashes records in order and counts them', () => {
    const a = new RecordHasher().add({ id: 1 }).add({ id: 2 });
    const b = new RecordHasher().add({ id: 2 }).add({ id: 1 });
    expect(a.count).toBe(2);
    expect(a.digest()).not.toBe(b.digest());
    expect(new RecordHasher().add({ x: 1, y: 2 }).digest()).toBe(
      new RecordHasher().add({ y: 2, x: 1 }).digest(),
    );
  });
});

describe('file hashes', () => {
  it('streams a file to the same SHA-256 as the bytes', async () => {
    const dir = tmpDir('bfe-hash-');
    const bytes = new Uint8Array(300_000).map((_, i) => i % 251);
    const path = join(dir, 'f.bin');
    writeFileSync(path, bytes);
    expect(await fileSha256(path)).toBe(bytesSha256(bytes));
    // The SHA-256 of the empty string, from FIPS 180-2.
    expect(bytesSha256(new Uint8Array())).toBe(
      'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
    );
  });
});
