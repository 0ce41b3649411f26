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
import { HttpError, errorHandler } from './http-errors.js';
import type { AccessPolicy, Grant } from './keys.js';
import { createMetrics } from './metrics.js';
import { memoryRoutes } from './routes-memories.js';
import { pageRoutes } from './routes-page.js';
import { serviceRoutes } from './routes-service.js';
import { searchRoutes } from './routes-search.js';
import { MAX_BATCH } from './schemas.js';

/** Options of {@link buildServer}. */
export interface ServerOptions {
  readonly store: MemoryStore;
  /** Who may do what: {@link keysPolicy} or {@link loopbackPolicy}. */
  readonly access: AccessPolicy;
  /** The store's largest memory text in UTF-8 bytes (its `maxTextBytes`); sizes the body limit. */
  readonly maxTextBytes?: number;
  /** Fastify's logger option (default: off). */
  readonly logger?: FastifyServerOptions['logger'];
}

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
 * The body limit: a full batch of the largest texts, twice over for JSON escaping and
 * metadata (a body past it is refused with 413 before it is parsed).
 */
export function bodyLimitFor(maxTextBytes: number): number {
  return 2 * maxTextBytes * MAX_BATCH;
}

/**
 * Builds the HTTP service over an open store (the caller owns the store: close the server,
 * then the store). Routes are declared with zod schemas; `/openapi.json` is generated from
 * them.
 * @example
 * const app = await buildServer({ store, access: loopbackPolicy() });
 * const res = await app.inject({ method: 'GET', url: '/healthz' }); // 200 { status: 'ok', … }
 */
export async function buildServer(options: ServerOptions): Promise<FastifyInstance> {
  const bodyLimit = bodyLimitFor(options.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES);
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit,
    requestTimeout: 120_000,
    return503OnClosing: true,
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

  const metrics = createMetrics(options.store);
  app.decorateRequest('grant', null as unknown as Grant);
  app.addHook('onRequest', async (request) => {
    const isPublic = request.routeOptions.config.public === true;
    const verdict = options.access.authorize(
      request.headers.authorization,
      request.socket.remoteAddress,
    );
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
  });
  // Graceful close: Fastify closes idle keep-alive sockets when it starts closing; a socket
  // busy with an in-flight request is told to close after its response, so close() does not
  // wait out the keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) void reply.header('connection', 'close');
  });
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observe(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
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
  serviceRoutes(typed, options.store, metrics.registry);
  memoryRoutes(typed, options.store);
  searchRoutes(typed, options.store);
  pageRoutes(typed);
  await app.ready();
  return app;
}
