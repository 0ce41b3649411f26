import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { interventionsToJson, searchResultToJson, type MemoryStore } from '@bfe/store';
import { reachBank, type App } from './access.js';
import { bankParams, errorSchema, searchBodySchema, searchResponseSchema } from './schemas.js';

type SearchResponse = z.output<typeof searchResponseSchema>;

/** `POST /v1/banks/{bank}/search`: ranked memories with token evidence. */
export function searchRoutes(app: App, store: MemoryStore): void {
  app.post(
    '/v1/banks/:bank/search',
    {
      // A 200 body is built field by field by `searchResultToJson` (typed by the schema), so it is
      // written with `JSON.stringify` alone: the zod pass per response cost more than the JSON.
      // The schema still documents it (`/openapi.json`) and the tests parse responses with it;
      // every other status goes through the zod serializer.
      serializerCompiler: (route) =>
        route.httpStatus === '200'
          ? (data: SearchResponse) => JSON.stringify(data)
          : serializerCompiler(route as unknown as Parameters<typeof serializerCompiler>[0]),
      schema: {
        summary: 'Rank the bank’s memories for a query, with token evidence',
        params: bankParams,
        body: searchBodySchema,
        response: {
          200: searchResponseSchema,
          400: errorSchema,
          401: errorSchema,
          404: errorSchema,
          413: errorSchema,
          415: errorSchema,
        },
      },
    },
    async (request, reply) => {
      const { bank } = request.params;
      reachBank(request, store, bank, { exists: true });
      const t0 = performance.now();
      const { query, k, system, alpha, explain, tokenK, interventions } = request.body;
      const { results, interventions: found } = await store.searchWithInterventions({
        bank,
        query,
        k,
        system,
        explain,
        ...(alpha === undefined ? {} : { alpha }),
        ...(tokenK === undefined ? {} : { tokenK }),
        ...(interventions === undefined ? {} : { interventions }),
      });
      // The store's share of the request (encode + rank + explain), for clients and load runs.
      void reply.header('server-timing', `store;dur=${(performance.now() - t0).toFixed(2)}`);
      const out: SearchResponse = { results: results.map(searchResultToJson) };
      return found === undefined ? out : { ...out, interventions: interventionsToJson(found) };
    },
  );
}
