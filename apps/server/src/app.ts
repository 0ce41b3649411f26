import fastifySwagger from '@fastify/swagger';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { decodeUtf8Strict } from '@bfe/core';
import { DEFAULT_MAX_TEXT_BYTES, type MemoryStore } from '@bfe/store';
import { hostGuard } from './guard.js';
import { storeHealth, type IndexState } from './health.js';
import { DEFAULT_TARPIT_MS } from './tarpit.js';
import { requestHooks } from './hooks.js';
import { HttpError, clientErrorResponse, errorHandler } from './http-errors.js';
import type { AccessPolicy, Grant } from './keys.js';
import {
  DEFAULT_MAX_RESPONSE_BYTES,
  DEFAULT_OTHER_BODY_BYTES,
  DEFAULT_SEARCH_BODY_BYTES,
  createLimiter,
  type SizeLimits,
} from './limits.js';
import { mcpRoutes } from './mcp/http.js';
import { createMetrics } from './metrics.js';
import { memoryRoutes } from './routes-memories.js';
import { pageRoutes } from './routes-page.js';
import { serviceRoutes } from './routes-service.js';
import { searchRoutes } from './routes-search.js';
import { MAX_BATCH, MAX_ID_CHARS } from './schemas.js';
import { storeWrites, type StoreWrites } from './writes.js';

/** Options of {@link buildServer}. */
export interface ServerOptions {
  readonly store: MemoryStore;
  /** Who may do what: {@link keysPolicy} or {@link loopbackPolicy}. */
  readonly access: AccessPolicy;
  /** The store's largest memory text in UTF-8 bytes (its `maxTextBytes`); sizes the body limit. */
  readonly maxTextBytes?: number;
  /**
   * Without a keys file, the `Host` names (beside localhost, 127.0.0.0/8 and ::1) requests may
   * carry, and `Origin`s may name: the address the server listens on, a name it is reached by.
   */
  readonly allowedHosts?: readonly string[];
  /** Body and response size limits in bytes (defaults: {@link SizeLimits}' constants). */
  readonly sizes?: Partial<SizeLimits>;
  /**
   * How long `close()` waits for open connections (in-flight requests, slow clients) before it
   * cuts them, in milliseconds. Default {@link DEFAULT_DRAIN_MS}.
   */
  readonly drainMs?: number;
  /** Fastify's logger option (default: off). */
  readonly logger?: FastifyServerOptions['logger'];
  /**
   * How long a request refused by its key's rate or concurrency limit is held before its 429,
   * in milliseconds (at most its `Retry-After`); 0 answers at once. Default {@link DEFAULT_TARPIT_MS}.
   */
  readonly tarpitMs?: number;
  /** The store's graph-keeping token index, when the caller made it: `/readyz` reports it. */
  readonly index?: IndexState;
}

/** How long a shutdown waits for open connections by default: 10 s. */
export const DEFAULT_DRAIN_MS = 10_000;

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request may do; set by the access hook for every non-public route. */
    grant: Grant;
  }
  interface FastifyContextConfig {
    /** Served without a key (still loopback-only when the server has no keys file). */
    public?: boolean;
  }
}

/**
 * The body limit of adds and updates: a full batch of the largest texts, twice over for JSON
 * escaping and metadata (a body past it is refused with 413 before it is parsed).
 */
export function bodyLimitFor(maxTextBytes: number): number {
  return 2 * maxTextBytes * MAX_BATCH;
}

/**
 * Builds the HTTP service over an open store (the caller owns the store: close the server,
 * then the store; `app.close()` resolves once every write under way has settled). Routes are
 * declared with zod schemas; `/openapi.json` is generated from them.
 * @example
 * const app = await buildServer({ store, access: loopbackPolicy() });
 * const res = await app.inject({ method: 'GET', url: '/healthz' }); // 200 { status: 'ok' }
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const sizes: SizeLimits = {
    searchBody: DEFAULT_SEARCH_BODY_BYTES,
    writeBody: bodyLimitFor(options.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES),
    otherBody: DEFAULT_OTHER_BODY_BYTES,
    response: DEFAULT_MAX_RESPONSE_BYTES,
    ...options.sizes,
  };
  const metrics = createMetrics(options.store);
  const health = storeHealth(options.store, options.index);
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: sizes.otherBody,
    requestTimeout: 120_000,
    // The hooks answer 503 while closing, in the service's error shape.
    return503OnClosing: false,
    // A memory id is up to 512 characters, 1,024 UTF-16 units when every one is astral; a
    // longer path segment is a 414 (through `frameworkErrors`).
    routerOptions: { maxParamLength: 2 * MAX_ID_CHARS },
    frameworkErrors: errorHandler,
    clientErrorHandler(error, socket) {
      const code = clientErrorResponse(error, socket);
      if (code !== undefined) metrics.clientError(code);
    },
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({
      error: { code: 'NOT_FOUND', message: `no route ${request.method} ${request.url}` },
    });
  });

  // JSON only, decoded strictly: Fastify's own parser would turn invalid UTF-8 into U+FFFD.
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = decodeUtf8Strict(body as Buffer, 'request body');
    } catch (error) {
      done(new HttpError(400, 'INVALID_UTF8', (error as Error).message), undefined);
      return;
    }
    parseJson(request, text, done);
  });

  app.decorateRequest('grant', null as unknown as Grant);
  requestHooks(app, {
    access: options.access,
    guard: options.access.mode === 'loopback' ? hostGuard(options.allowedHosts ?? []) : undefined,
    limiter: createLimiter(),
    metrics,
    maxResponseBytes: sizes.response,
    drainMs: options.drainMs ?? DEFAULT_DRAIN_MS,
    tarpitMs: options.tarpitMs ?? DEFAULT_TARPIT_MS,
  });
  const writes: StoreWrites = storeWrites(options.store, health, metrics);
  // After the server has closed (connections ended or cut): writes whose clients were cut
  // still finish, so the caller may close the store next.
  app.addHook('onClose', async () => {
    await writes.drain();
  });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'bfe memory service',
        description:
          'Memories in banks, searched with token-level evidence (Beyond the Final Embedding).',
        version: '0.1.0',
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });

  const typed = app.withTypeProvider<ZodTypeProvider>();
  serviceRoutes(typed, options.store, metrics, health);
  memoryRoutes(typed, options.store, writes, sizes.writeBody);
  searchRoutes(typed, options.store, sizes.searchBody);
  pageRoutes(typed);
  mcpRoutes(typed, options.store, writes, { body: sizes.writeBody, response: sizes.response });
  await app.ready();
  return app;
}
