import { z } from 'zod';
import type { MemoryStore } from '@bfe/store';
import type { App } from './access.js';
import type { StoreHealth } from './health.js';
import { canSee } from './keys.js';
import type { ServerMetrics } from './metrics.js';
import { errorResponses } from './responses.js';
import { banksResponseSchema, errorSchema, healthSchema, readySchema } from './schemas.js';

/** `/healthz`, `/readyz`, `/metrics`, `/openapi.json` and the bank listing. */
export function serviceRoutes(
  app: App,
  store: MemoryStore,
  metrics: ServerMetrics,
  health: StoreHealth,
): void {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: {
        summary:
          'Health: the store is open, its write-ahead log writable, and the last write did not fail on disk (503 otherwise)',
        security: [],
        response: {
          ...errorResponses(),
          200: healthSchema,
          // While shutting down, every route answers the error body.
          503: z.union([healthSchema, errorSchema]),
        },
      },
    },
    async (_request, reply) => {
      const result = await health.check();
      return reply.status(result.status === 'ok' ? 200 : 503).send(result);
    },
  );

  app.get(
    '/readyz',
    {
      config: { public: true },
      schema: {
        summary:
          'Readiness: /healthz’s checks (store open, write-ahead log writable, last write durable) and the token index built or loaded (503 otherwise)',
        security: [],
        response: {
          ...errorResponses(),
          200: readySchema,
          503: z.union([readySchema, errorSchema]),
        },
      },
    },
    async (_request, reply) => {
      const result = await health.ready();
      return reply.status(result.status === 'ready' ? 200 : 503).send(result);
    },
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary:
          'Prometheus metrics (text exposition format): store-wide for an admin key (and without a keys file), its own banks’ series for any other key',
        produces: ['text/plain'],
        response: {
          200: z.string().describe('Prometheus text exposition format 0.0.4'),
          ...errorResponses({ keyed: true }),
        },
      },
    },
    async (request, reply) => {
      const text = await metrics.render(request.grant);
      return reply.type(metrics.registry.contentType).send(text);
    },
  );

  app.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: {
        summary: 'This OpenAPI document',
        security: [],
        response: { 200: z.record(z.string(), z.unknown()), ...errorResponses() },
      },
    },
    async () => app.swagger() as Record<string, unknown>,
  );

  app.get(
    '/v1/banks',
    {
      schema: {
        summary: 'The banks this key sees that hold memories',
        response: { 200: banksResponseSchema, ...errorResponses({ keyed: true }) },
      },
    },
    async (request) => ({ banks: store.banks().filter((b) => canSee(request.grant, b)) }),
  );
}
