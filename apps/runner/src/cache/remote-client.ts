import { createHmac } from 'node:crypto';
import { BfeError, type BfeErrorCode } from '@bfe/core';
import { publisherKeysFromEnv, type PublisherKeys } from './remote-signing.js';

// The HTTP side of the remote tier: Turborepo's remote-cache protocol (`/v8/artifacts/:hash`,
// a bearer token, the team as `?slug=`), as served by `turborepo-remote-cache` (`pnpm
// cache:serve`) or Vercel. It knows bytes and status codes only; what an artifact is, how it is
// chunked and checked is `remote-tier.ts`.

/** The runner's code for a remote cache that refuses this token or team (exit 2). */
export const REMOTE_CACHE_AUTH = 'REMOTE_CACHE_AUTH';
/** The runner's code for a remote cache that cannot be reached or answers nonsense (exit 2). */
export const REMOTE_CACHE_UNAVAILABLE = 'REMOTE_CACHE_UNAVAILABLE';

/**
 * The remote cache refused us (401/403), or it is configured halfway (`TURBO_API` without
 * `TURBO_TOKEN` or `TURBO_TEAM`). Turbo itself reports a 401 as a silent cache miss; bfe
 * stops instead, so a team never recomputes everything without knowing why.
 */
export class RemoteCacheError extends BfeError {
  constructor(code: typeof REMOTE_CACHE_AUTH | typeof REMOTE_CACHE_UNAVAILABLE, message: string) {
    // The cast widens core's union by runner-local codes, as CACHE_UNWRITABLE does.
    super(code as BfeErrorCode, message, {
      suggestion:
        code === REMOTE_CACHE_AUTH
          ? 'Check TURBO_TOKEN and TURBO_TEAM against the server (`pnpm cache:serve` prints them), or unset TURBO_API (or set BFE_REMOTE_CACHE=off) to run with the local cache only.'
          : 'Start the server (`pnpm cache:serve`), fix TURBO_API, or set BFE_REMOTE_CACHE=off to run with the local cache only.',
    });
  }
}

/** Where the team cache is and who we are to it. */
export interface RemoteCacheConfig {
  /** Base URL, e.g. `http://127.0.0.1:3000` (no trailing slash). */
  readonly api: string;
  readonly token: string;
  /** The team slug (`?slug=`): the namespace of artifacts on the server. */
  readonly team: string;
  /** Bytes per uploaded part (default {@link DEFAULT_CHUNK_BYTES}); halved on a 413. */
  readonly chunkBytes: number;
  /**
   * HMAC-SHA256 key: every upload is signed with it and a download without a valid signature
   * is refused, so whoever can write the server's storage (a shared disk, a bucket) but holds
   * no key cannot plant an artifact. It defaults to the token, which every reader holds.
   */
  readonly signatureKey: string;
  /**
   * The publisher key pair (`BFE_CACHE_SIGNING_KEY`, `BFE_CACHE_VERIFY_KEY`): when set, a
   * download must carry a valid signature by its public key, and only a machine holding the
   * private key uploads (and signs what it uploads). Absent: the token's signature alone.
   */
  readonly publisher?: PublisherKeys;
}

/** 32 MiB: under turborepo-remote-cache's default body limit (100 MiB) with room to spare. */
export const DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024;

/**
 * The remote tier's settings from the environment, the same variables turbo reads:
 * `TURBO_API`, `TURBO_TOKEN`, `TURBO_TEAM`; plus `BFE_REMOTE_CACHE=off` (local only),
 * `BFE_REMOTE_CACHE_CHUNK_BYTES`, the team key `BFE_REMOTE_CACHE_SIGNATURE_KEY`, else turbo's
 * `TURBO_REMOTE_CACHE_SIGNATURE_KEY`, else the token itself, and the publisher keys
 * `BFE_CACHE_SIGNING_KEY` / `BFE_CACHE_VERIFY_KEY` (remote-signing.ts). Undefined when
 * `TURBO_API` is unset or the tier is off.
 * @throws RemoteCacheError (REMOTE_CACHE_AUTH) when `TURBO_API` is set without a token or team,
 *   or a publisher key is unusable
 * @example remoteCacheFromEnv({ TURBO_API: 'http://127.0.0.1:3000', TURBO_TOKEN: 't', TURBO_TEAM: 'bfe' })
 */
export function remoteCacheFromEnv(
  env: NodeJS.ProcessEnv = process.env,
): RemoteCacheConfig | undefined {
  const api = env.TURBO_API?.trim();
  if (api === undefined || api === '' || env.BFE_REMOTE_CACHE === 'off') return undefined;
  const token = env.TURBO_TOKEN?.trim() ?? '';
  const team = (env.TURBO_TEAM ?? env.TURBO_TEAMID)?.trim() ?? '';
  if (token === '') {
    throw new RemoteCacheError(REMOTE_CACHE_AUTH, `TURBO_API is ${api} but TURBO_TOKEN is unset.`);
  }
  if (team === '') {
    throw new RemoteCacheError(REMOTE_CACHE_AUTH, `TURBO_API is ${api} but TURBO_TEAM is unset.`);
  }
  const rawChunk = env.BFE_REMOTE_CACHE_CHUNK_BYTES;
  const chunkBytes =
    rawChunk === undefined || rawChunk === '' ? DEFAULT_CHUNK_BYTES : Number(rawChunk);
  if (!Number.isInteger(chunkBytes) || chunkBytes < 1024) {
    throw new RemoteCacheError(
      REMOTE_CACHE_UNAVAILABLE,
      `BFE_REMOTE_CACHE_CHUNK_BYTES must be an integer of at least 1024, got '${rawChunk}'.`,
    );
  }
  const signatureKey =
    nonEmpty(env.BFE_REMOTE_CACHE_SIGNATURE_KEY) ??
    nonEmpty(env.TURBO_REMOTE_CACHE_SIGNATURE_KEY) ??
    token;
  let publisher: PublisherKeys | undefined;
  try {
    publisher = publisherKeysFromEnv(env);
  } catch (error) {
    throw new RemoteCacheError(REMOTE_CACHE_AUTH, `${(error as Error).message}.`);
  }
  const config = { api: api.replace(/\/+$/, ''), token, team, chunkBytes, signatureKey };
  return publisher === undefined ? config : { ...config, publisher };
}

/**
 * Whether this machine uploads: always without a publisher key; with one, only when it holds
 * the private half (a reader's uploads would carry no publisher signature, which readers refuse).
 */
export function canPublish(config: RemoteCacheConfig): boolean {
  return config.publisher === undefined || config.publisher.signingKey !== undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

/** The id {@link RemoteCacheClient.preflight} asks for (no artifact has it). */
const PREFLIGHT_ID = '0'.repeat(16);

/** An id on the server: lower-case hex (a cache key or a part's SHA-256). */
const ID_PATTERN = /^[0-9a-f]{16,128}$/;

/** A thin client of `/v8/artifacts`: status, exists, get, put. */
export class RemoteCacheClient {
  readonly config: RemoteCacheConfig;

  constructor(config: RemoteCacheConfig) {
    this.config = config;
  }

  /**
   * Checks the server answers and accepts this token and team: a HEAD of a probe id, which the
   * server guards like every artifact (its `/v8/artifacts/status` is not guarded at all, so it
   * cannot tell a wrong token). 200 or 404 pass.
   * @throws RemoteCacheError: REMOTE_CACHE_AUTH on 400/401/403, REMOTE_CACHE_UNAVAILABLE otherwise
   */
  async preflight(): Promise<void> {
    await this.exists(PREFLIGHT_ID);
  }

  /** Whether the server holds `id`. */
  async exists(id: string): Promise<boolean> {
    const res = await this.#request('HEAD', id);
    await res.arrayBuffer();
    if (res.ok) return true;
    if (res.status === 404) return false;
    throw this.#statusError(res.status, id);
  }

  /** The bytes stored under `id`, or undefined (404). */
  async get(id: string): Promise<Buffer | undefined> {
    const res = await this.#request('GET', id);
    if (res.status === 404) {
      await res.arrayBuffer();
      return undefined;
    }
    if (!res.ok) {
      await res.arrayBuffer();
      throw this.#statusError(res.status, id);
    }
    return Buffer.from(await res.arrayBuffer());
  }

  /**
   * Stores `body` under `id`. Returns `'too-large'` on 413 (the server's body limit), so the
   * caller can cut smaller parts.
   */
  async put(id: string, body: Uint8Array): Promise<'ok' | 'too-large'> {
    const res = await this.#request('PUT', id, body);
    await res.arrayBuffer();
    if (res.ok) return 'ok';
    if (res.status === 413) return 'too-large';
    throw this.#statusError(res.status, id);
  }

  async #request(method: string, id: string, body?: Uint8Array): Promise<Response> {
    if (!ID_PATTERN.test(id)) throw new Error(`invalid remote cache id '${id}'`);
    const url = `${this.config.api}/v8/artifacts/${id}?slug=${encodeURIComponent(this.config.team)}`;
    try {
      return await fetch(url, {
        method,
        headers: {
          authorization: `Bearer ${this.config.token}`,
          // A server that keeps turbo's artifact tags (pnpm cache:serve does) serves only what
          // has one; bfe's own integrity is the index's signature, this tag just mirrors it.
          ...(body === undefined
            ? {}
            : {
                'content-type': 'application/octet-stream',
                'x-artifact-tag': createHmac('sha256', this.config.signatureKey)
                  .update(body)
                  .digest('base64'),
              }),
        },
        ...(body === undefined ? {} : { body }),
      });
    } catch (cause) {
      const reason = cause instanceof Error ? (cause.cause ?? cause).toString() : String(cause);
      throw new RemoteCacheError(
        REMOTE_CACHE_UNAVAILABLE,
        `Remote cache ${this.config.api} cannot be reached (${method} ${id}): ${reason}.`,
      );
    }
  }

  #statusError(status: number, id: string): RemoteCacheError {
    if (status === 400 || status === 401 || status === 403) {
      return new RemoteCacheError(
        REMOTE_CACHE_AUTH,
        `Remote cache ${this.config.api} refused team '${this.config.team}' with this TURBO_TOKEN (HTTP ${status} on ${id}).`,
      );
    }
    return new RemoteCacheError(
      REMOTE_CACHE_UNAVAILABLE,
      `Remote cache ${this.config.api} answered HTTP ${status} on ${id}.`,
    );
  }
}
