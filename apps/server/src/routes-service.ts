import type { Registry } from 'prom-client';
import type { MemoryStore } from '@bfe/store';
import type { App } from './access.js';
import { canSee } from './keys.js';
import { banksResponseSchema, errorSchema, healthSchema } from './schemas.js';

const errors = { 401: errorSchema, 403: errorSchema };

/** `/healthz`, `/metrics`, `/openapi.json` and the bank listing. */
export function serviceRoutes(app: App, store: MemoryStore, registry: Registry): void {
  app.get(
    '/healthz',
    {
      config: { public: true },
      schema: { summary: 'Liveness', security: [], response: { 200: healthSchema } },
    },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/metrics',
    {
      schema: {
        summary: 'Prometheus metrics (text exposition format); any valid key',
        produces: ['text/plain'],
      },
    },
    async (_request, reply) => {
      const text = await registry.metrics();
      return reply.type(registry.contentType).send(text);
    },
  );

  app.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: { summary: 'This OpenAPI document', security: [] },
    },
    async () => app.swagger(),
  );

  app.get(
    '/v1/banks',
    {
      schema: {
        summary: 'The banks this key sees that hold memories',
        response: { 200: banksResponseSchema, ...errors },
      },
    },
    async (request) => ({ banks: store.banks().filter((b) => canSee(request.grant, b)) }),
  );
}
