import { HttpError } from './http-errors.js';

/** One principal's request limits (an API key, or the loopback user without a keys file). */
export interface RequestLimits {
  /** Requests per second, refilled continuously; `Infinity`: no rate limit. */
  readonly rate: number;
  /** Requests a full bucket admits at once. */
  readonly burst: number;
  /** Requests in flight at once. */
  readonly concurrency: number;
}

/** The defaults a key without its own limits gets (and the loopback user). */
export const DEFAULT_LIMITS: RequestLimits = { rate: 100, burst: 200, concurrency: 16 };

/** Body limits per route group, in bytes, and the largest response body. */
export interface SizeLimits {
  /** `POST …/search`: a query of 16,384 characters with options fits several times over. */
  readonly searchBody: number;
  /** Adds and updates: {@link bodyLimitFor} the store's `maxTextBytes`. */
  readonly writeBody: number;
  /** Every other route (none takes a body). */
  readonly otherBody: number;
  /** Larger response bodies are refused (400 `RESPONSE_TOO_LARGE`) instead of sent. */
  readonly response: number;
}

export const DEFAULT_SEARCH_BODY_BYTES = 64 * 1024;
export const DEFAULT_OTHER_BODY_BYTES = 64 * 1024;
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

/** What {@link Limiter.admit} remembers per principal. */
interface Bucket {
  tokens: number;
  at: number;
  inFlight: number;
}

/** Why a request was refused, for the rejection counter. */
export type Rejection = 'rate' | 'concurrency';

/**
 * Per-principal rate limits (token buckets) and concurrency caps. A principal is any object
 * (each key's grant): its state lives in a WeakMap beside it.
 * @example
 * const limiter = createLimiter();
 * const release = limiter.admit(grant, grant.limits); // throws HttpError 429 when over
 * // … answer the request, then:
 * release();
 */
export interface Limiter {
  /**
   * Admits one request of `principal` or throws a 429 {@link HttpError} whose `retryAfter`
   * says when to try again (whole seconds). The returned release may be called more than once.
   */
  admit(principal: object, limits: RequestLimits): () => void;
}

/** A 429: the body's code says which limit; `Retry-After` is `retryAfter` seconds. */
export class TooManyRequests extends HttpError {
  constructor(
    readonly reason: Rejection,
    readonly retryAfter: number,
    message: string,
  ) {
    super(429, reason === 'rate' ? 'RATE_LIMITED' : 'TOO_MANY_IN_FLIGHT', message, {
      'retry-after': String(retryAfter),
    });
  }
}

/** A limiter on the clock `now` (milliseconds; injectable for tests). */
export function createLimiter(now: () => number = () => performance.now()): Limiter {
  const buckets = new WeakMap<object, Bucket>();
  return {
    admit(principal, limits) {
      const t = now();
      let b = buckets.get(principal);
      if (b === undefined) {
        b = { tokens: limits.burst, at: t, inFlight: 0 };
        buckets.set(principal, b);
      }
      if (Number.isFinite(limits.rate)) {
        b.tokens = Math.min(limits.burst, b.tokens + ((t - b.at) / 1000) * limits.rate);
        b.at = t;
      } else b.tokens = limits.burst;
      if (b.inFlight >= limits.concurrency)
        throw new TooManyRequests(
          'concurrency',
          1,
          `this key has ${b.inFlight} requests in flight, its limit: wait for one to finish`,
        );
      if (b.tokens < 1)
        throw new TooManyRequests(
          'rate',
          Math.max(1, Math.ceil((1 - b.tokens) / limits.rate)),
          `this key is over its rate of ${limits.rate} requests/s (burst ${limits.burst})`,
        );
      b.tokens -= 1;
      b.inFlight += 1;
      const bucket = b;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        bucket.inFlight -= 1;
      };
    },
  };
}
