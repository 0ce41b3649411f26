import type { FastifyInstance } from 'fastify';
import { HttpError } from './http-errors.js';
import type { AccessPolicy } from './keys.js';
import { TooManyRequests, type Limiter } from './limits.js';
import { bankOfRequest, type ServerMetrics } from './metrics.js';
import { createTarpit } from './tarpit.js';

/** What {@link requestHooks} needs. */
export interface HookOptions {
  readonly access: AccessPolicy;
  /** Checks `Host` and `Origin` (a server without a keys file), or undefined. */
  readonly guard: ((host: string | undefined, origin: string | undefined) => void) | undefined;
  readonly limiter: Limiter;
  readonly metrics: ServerMetrics;
  /** Larger response bodies are refused with 400 `RESPONSE_TOO_LARGE`. */
  readonly maxResponseBytes: number;
  /** How long a shutdown waits for open connections before it cuts them, in milliseconds. */
  readonly drainMs: number;
  /** How long a request refused by its key's limits is held before its 429 (`tarpit.ts`); 0: not. */
  readonly tarpitMs: number;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Frees the request's concurrency slot (idempotent); set once the request is admitted. */
    releaseSlot: (() => void) | null;
  }
}

/**
 * The per-request hooks: while closing, 503 for every new request; the `Host`/`Origin` guard;
 * the access policy; the key's rate and concurrency limits (not on public routes; a refused
 * request is held `tarpitMs`, at most its `Retry-After`, before its 429: `tarpit.ts`); the
 * response size cap; metrics per route and per bank. And the shutdown's drain: once `close()`
 * starts, connections still open after `drainMs` (a client stalled half-way through a body, a
 * slow reader) are cut, so a close ends in bounded time.
 */
export function requestHooks(app: FastifyInstance, options: HookOptions): void {
  const { access, guard, limiter, metrics } = options;
  let closing = false;
  let drain: NodeJS.Timeout | undefined;
  const tarpit = createTarpit();
  app.decorateRequest('releaseSlot', null);

  app.addHook('onRequest', async (request, reply) => {
    if (closing) throw new HttpError(503, 'UNAVAILABLE', 'the server is shutting down');
    const origin = request.headers.origin;
    guard?.(request.headers.host, Array.isArray(origin) ? origin[0] : origin);
    const isPublic = request.routeOptions.config.public === true;
    const verdict = access.authorize(request.headers.authorization, request.socket.remoteAddress);
    if (verdict === 'not-loopback')
      throw new HttpError(
        403,
        'FORBIDDEN',
        'this server has no keys file: it answers loopback requests only',
      );
    if (typeof verdict === 'object') request.grant = verdict;
    else if (!isPublic)
      throw new HttpError(
        401,
        'UNAUTHORIZED',
        verdict === 'no-key' ? 'missing Authorization: Bearer <key>' : 'unknown API key',
      );
    if (isPublic || typeof verdict !== 'object') return;
    try {
      request.releaseSlot = limiter.admit(verdict, verdict.limits);
    } catch (error) {
      if (error instanceof TooManyRequests) {
        metrics.rejected(error.reason);
        if (!closing)
          await tarpit.hold(verdict, Math.min(options.tarpitMs, 1000 * error.retryAfter));
      }
      throw error;
    }
    // A client that goes away frees its slot too (onSend does not run for it).
    reply.raw.once('close', request.releaseSlot);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    request.releaseSlot?.();
    // Graceful close: a socket busy with a request is told to close after its response.
    if (closing) void reply.header('connection', 'close');
    if (typeof payload !== 'string' || payload.length * 3 <= options.maxResponseBytes)
      return payload;
    const bytes = Buffer.byteLength(payload);
    if (bytes <= options.maxResponseBytes) return payload;
    void reply.status(400);
    return JSON.stringify({
      error: {
        code: 'RESPONSE_TOO_LARGE',
        message:
          `the response would be ${bytes} bytes, over the limit of ${options.maxResponseBytes}: ` +
          'ask for fewer results (k, limit) or set explain false',
      },
    });
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const status = reply.statusCode;
    const bank = bankOfRequest(request.params, request.grant, status);
    metrics.observe(route, request.method, status, reply.elapsedTime / 1000, bank);
  });

  app.addHook('preClose', async () => {
    closing = true;
    tarpit.releaseAll();
    drain = setTimeout(() => app.server.closeAllConnections(), options.drainMs);
  });
  app.addHook('onClose', async () => {
    clearTimeout(drain);
  });
}
