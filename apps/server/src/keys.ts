import { createHash, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError, decodeUtf8Strict } from '@bfe/core';
import { DEFAULT_LIMITS, type RequestLimits } from './limits.js';
import { keysFileSchema, type KeysFile } from './schemas.js';

/**
 * What a request may do: the banks it sees, whether it may write them, whether it reads the
 * store-wide metrics, and its request limits. One grant per key (its rate and concurrency
 * state hang off the object).
 */
export interface Grant {
  /** Every bank (loopback mode, no keys file) or exactly these. */
  readonly banks: ReadonlySet<string> | 'all';
  readonly write: boolean;
  /** Store-wide metrics (totals, every route, the process); otherwise its own banks' only. */
  readonly admin: boolean;
  readonly limits: RequestLimits;
}

/** Why a request was refused before reaching a route. */
export type Denial = 'no-key' | 'bad-key' | 'not-loopback';

/**
 * The server's access policy: API keys from a keys file, or, without one, loopback requests
 * only (every bank, read and write).
 */
export interface AccessPolicy {
  readonly mode: 'keys' | 'loopback';
  /** The grant of a request, from its `Authorization` header and peer address. */
  authorize(authorization: string | undefined, remoteAddress: string | undefined): Grant | Denial;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/**
 * A policy from a parsed keys file. Keys are compared in constant time: the presented key and
 * every stored key are hashed to 32 bytes and each is compared with `timingSafeEqual`, all of
 * them every time, so neither a key's length nor its position leaks through timing. A key's
 * unset limits take `defaults`.
 * @example
 * const policy = keysPolicy({ 'k'.repeat(32): { banks: ['alice'], write: true, admin: false } });
 * policy.authorize(`Bearer ${'k'.repeat(32)}`, '10.0.0.2'); // { banks: Set { 'alice' }, write: true, … }
 */
export function keysPolicy(
  keys: KeysFile | z.input<typeof keysFileSchema>,
  defaults: RequestLimits = DEFAULT_LIMITS,
): AccessPolicy {
  const entries = Object.entries(keys).map(([key, grant]) => ({
    hash: digest(key),
    grant: {
      banks: new Set(grant.banks),
      write: grant.write ?? false,
      admin: grant.admin ?? false,
      limits: {
        rate: grant.rate ?? defaults.rate,
        burst: grant.burst ?? defaults.burst,
        concurrency: grant.concurrency ?? defaults.concurrency,
      },
    } satisfies Grant,
  }));
  return {
    mode: 'keys',
    authorize(authorization) {
      const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
      if (match === null) return 'no-key';
      const presented = digest(match[1]!);
      let found: Grant | undefined;
      for (const e of entries) if (timingSafeEqual(e.hash, presented)) found ??= e.grant;
      return found ?? 'bad-key';
    },
  };
}

/** True for 127.0.0.0/8, ::1 and their IPv4-mapped forms. */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const a = address.startsWith('::ffff:') ? address.slice(7) : address;
  return a === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/**
 * Without a keys file: loopback peers get every bank, read and write, and every metric;
 * others nothing. (The `Host` and `Origin` checks against DNS rebinding are the server's:
 * `hostGuard` in guard.ts.)
 */
export function loopbackPolicy(limits: RequestLimits = DEFAULT_LIMITS): AccessPolicy {
  const all: Grant = { banks: 'all', write: true, admin: true, limits };
  return {
    mode: 'loopback',
    authorize: (_authorization, remoteAddress) =>
      isLoopback(remoteAddress) ? all : 'not-loopback',
  };
}

/** Whether a grant lets its holder see `bank`. */
export function canSee(grant: Grant, bank: string): boolean {
  return grant.banks === 'all' || grant.banks.has(bank);
}

/**
 * Reads and checks a keys file (`{"<key>": {"banks": [...], "write": true, "admin": false,
 * "rate": 20, "burst": 40, "concurrency": 4}}`; all but `banks` optional).
 * @throws ConfigError naming the file and each bad field
 */
export async function loadKeysFile(path: string): Promise<KeysFile> {
  let raw: unknown;
  try {
    raw = JSON.parse(decodeUtf8Strict(await readFile(path), path));
  } catch (error) {
    throw new ConfigError(`keys file ${path}: ${(error as Error).message}`, { cause: error });
  }
  const parsed = keysFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new ConfigError(`keys file ${path}: ${z.prettifyError(parsed.error)}`, {
      suggestion: 'Write {"<key of 16+ characters>": {"banks": ["alice"], "write": true}}.',
    });
  return parsed.data;
}
