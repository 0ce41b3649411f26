import { z } from 'zod';
import type { SearchResult } from '@bfe/store';
import { searchResponseJsonSchema, searchResultFromJson } from '@bfe/store/wire';
import type { SearchBackend, SearchQuery } from './types.js';

/** How long a search may take before the client gives up, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * The most results `bfe serve` explains in one search. Below it the client asks for evidence
 * (as a search in process returns it); above it, for none (the service refuses to explain more).
 */
const MAX_EXPLAIN_K = 100;

/** The service's address and credentials. */
export interface HttpOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8080` (the line `bfe serve` prints). */
  readonly url: string;
  /** Sent as `Authorization: Bearer <apiKey>`; omit for a server without `--keys` (loopback). */
  readonly apiKey?: string | undefined;
  /** Milliseconds per request. Default {@link DEFAULT_TIMEOUT_MS}. */
  readonly timeoutMs?: number | undefined;
  /** The `fetch` to use (tests, proxies). Default: the global `fetch`. */
  readonly fetch?: typeof fetch | undefined;
}

export const httpOptionsSchema = z.object({
  url: z.url({ protocol: /^https?$/ }),
  apiKey: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().optional(),
  fetch: z.custom<typeof fetch>((v) => typeof v === 'function', 'a function').optional(),
});

/** What a non-2xx answer carries (the service's error body). */
const errorBodySchema = z.object({ error: z.object({ code: z.string(), message: z.string() }) });

/**
 * The service refused or failed a request, or could not be reached. `status` is the HTTP
 * status (undefined when no answer came), `code` the service's error code (`error.code` of its
 * body) or one of the client's own: `UNREACHABLE` (no answer, or a timeout), `BAD_RESPONSE`
 * (an answer that is not the documented JSON), `HTTP_<status>` (an error without a JSON body).
 * `retryAfter` is the answer's `Retry-After` in seconds, when it sent one (429 `RATE_LIMITED`
 * or `TOO_MANY_IN_FLIGHT`, 503).
 */
export class BfeServiceError extends Error {
  readonly retryAfter: number | undefined;
  constructor(
    readonly status: number | undefined,
    readonly code: string,
    message: string,
    options: { cause?: unknown; retryAfter?: number | undefined } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BfeServiceError';
    this.retryAfter = options.retryAfter;
  }
}

/**
 * The client of `bfe serve`'s search route: `POST /v1/banks/{bank}/search` with
 * `{ query, k?, system? }` → `{ results: [...] }`, through the global `fetch`.
 * @example
 * const http = new HttpBackend({ url: 'http://127.0.0.1:8080', apiKey: 'key-alice' });
 * const results = await http.search({ bank: 'alice', query: 'what pet?', k: 3 });
 * results[0]; // { id: 'm1', rank: 1, score: 1.9, pooled: 0.6, sparse: 0.5, text, meta, evidence }
 */
export class HttpBackend implements SearchBackend {
  readonly #base: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: HttpOptions) {
    const parsed = httpOptionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new Error(`bfe service options: ${z.prettifyError(parsed.error)}`);
    }
    this.#base = options.url.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * @throws {BfeServiceError} for a non-2xx answer (with the service's code and message), no
   *   answer, or an answer that is not the documented JSON.
   */
  async search({
    bank,
    query,
    k,
    system,
    weights,
    minScore,
  }: SearchQuery): Promise<SearchResult[]> {
    const path = `/v1/banks/${encodeURIComponent(bank)}/search`;
    const what = `POST ${path}`;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    let response: Response;
    try {
      response = await this.#fetch(`${this.#base}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          query,
          k,
          system,
          weights,
          minScore,
          explain: (k ?? 10) <= MAX_EXPLAIN_K,
        }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (cause) {
      const why = cause instanceof Error ? cause.message : String(cause);
      throw new BfeServiceError(undefined, 'UNREACHABLE', `${what}: ${this.#base}: ${why}`, {
        cause,
      });
    }
    const body = await response.text();
    if (!response.ok) throw errorOf(response, what, body);
    let json: unknown;
    try {
      json = JSON.parse(body);
    } catch (cause) {
      throw new BfeServiceError(response.status, 'BAD_RESPONSE', `${what}: not JSON`, { cause });
    }
    const parsed = searchResponseJsonSchema.safeParse(json);
    if (!parsed.success) {
      const why = z.prettifyError(parsed.error);
      throw new BfeServiceError(response.status, 'BAD_RESPONSE', `${what}: ${why}`);
    }
    return parsed.data.results.map(searchResultFromJson);
  }
}

/** A non-2xx answer as an error: the service's `{ error: { code, message } }` when it sent one. */
function errorOf(response: Response, what: string, body: string): BfeServiceError {
  const { status } = response;
  const after = Number.parseInt(response.headers.get('retry-after') ?? '', 10);
  const retryAfter = Number.isInteger(after) && after >= 0 ? after : undefined;
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  const parsed = errorBodySchema.safeParse(json);
  if (parsed.success) {
    const { code, message } = parsed.data.error;
    return new BfeServiceError(status, code, `${what}: ${status} ${code}: ${message}`, {
      retryAfter,
    });
  }
  const text = body.trim().slice(0, 200);
  return new BfeServiceError(
    status,
    `HTTP_${status}`,
    `${what}: ${status}${text === '' ? '' : `: ${text}`}`,
    { retryAfter },
  );
}
