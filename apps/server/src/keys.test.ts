import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '@bfe/core';
import { tmpDir } from '@bfe/core/testing';
import { isLoopback, keysPolicy, loadKeysFile } from './keys.js';

describe('keys', () => {
  it('loads and checks a keys file', async () => {
    const dir = tmpDir();
    const good = join(dir, 'keys.json');
    writeFileSync(
      good,
      JSON.stringify({
        ['k'.repeat(20)]: { banks: ['alice'] },
        ['a'.repeat(20)]: { banks: [], admin: true, rate: 0.5, burst: 3, concurrency: 2 },
      }),
    );
    expect(await loadKeysFile(good)).toEqual({
      ['k'.repeat(20)]: { banks: ['alice'], write: false, admin: false },
      ['a'.repeat(20)]: {
        banks: [],
        write: false,
        admin: true,
        rate: 0.5,
        burst: 3,
        concurrency: 2,
      },
    });
    for (const [name, text, message] of [
      ['short.json', JSON.stringify({ short: { banks: ['a'] } }), /16 characters/],
      ['bank.json', JSON.stringify({ ['k'.repeat(20)]: { banks: ['../x'] } }), /bank name/],
      ['extra.json', JSON.stringify({ ['k'.repeat(20)]: { banks: [], root: true } }), /root/],
      ['rate.json', JSON.stringify({ ['k'.repeat(20)]: { banks: [], rate: 0 } }), /rate/],
      ['conc.json', JSON.stringify({ ['k'.repeat(20)]: { banks: [], concurrency: 0 } }), /conc/],
      ['empty.json', '{}', /at least one key/],
      ['broken.json', '{"k":', /JSON/],
    ] as const) {
      writeFileSync(join(dir, name), text);
      const error = await loadKeysFile(join(dir, name)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as Error).message).toMatch(message);
    }
  });

  it('authorizes Bearer keys only, exactly', () => {
    const key = 'abcdefghijklmnopqrst';
    const policy = keysPolicy(
      { [key]: { banks: ['alice'], write: true, concurrency: 3 } },
      { rate: 7, burst: 9, concurrency: 5 },
    );
    // The key's own limit wins; the others are the server's defaults.
    expect(policy.authorize(`Bearer ${key}`, '8.8.8.8')).toEqual({
      banks: new Set(['alice']),
      write: true,
      admin: false,
      limits: { rate: 7, burst: 9, concurrency: 3 },
    });
    expect(policy.authorize(`bearer ${key}`, undefined)).toMatchObject({ write: true });
    expect(policy.authorize(undefined, '127.0.0.1')).toBe('no-key');
    expect(policy.authorize(`Basic ${key}`, '127.0.0.1')).toBe('no-key');
    expect(policy.authorize(`Bearer ${key}x`, '127.0.0.1')).toBe('bad-key');
    expect(policy.authorize(`Bearer ${key.slice(1)}`, '127.0.0.1')).toBe('bad-key');
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.3.4.5', '::1', '::ffff:127.0.0.1'].map(isLoopback)).toEqual([
      true,
      true,
      true,
      true,
    ]);
    expect(['10.0.0.1', '::ffff:10.0.0.1', '::2', '1270.0.0.1', undefined].map(isLoopback)).toEqual(
      [false, false, false, false, false],
    );
  });
});
