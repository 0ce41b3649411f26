import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { interventionsToJson, searchResultToJson, type MemoryStore } from '@bfe/store';
import { reachBank, type App } from './access.js';
import { HttpError } from './http-errors.js';
import { errorResponses } from './responses.js';
import {
  EXPLAIN_DEFAULT_MAX_K,
  MAX_EXPLAIN_K,
  bankParams,
  searchBodySchema,
  searchResponseSchema,
} from './schemas.js';

type SearchResponse = z.output<typeof searchResponseSchema>;

/**
 * `POST /v1/banks/{bank}/search`: ranked memories with token evidence, bodies up to
 * `bodyLimit` bytes. Evidence is per result and query token, so `explain` defaults to true
 * for a small `k` only, and is refused above {@link MAX_EXPLAIN_K}.
 */
export function searchRoutes(app: App, store: MemoryStore, bodyLimit: number): void {
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
          ...errorResponses({ keyed: true, params: true, body: true }),
        },
      },
      bodyLimit,
    },
    async (request, reply) => {
      const { bank } = request.params;
      reachBank(request, store, bank, { exists: true });
      const t0 = performance.now();
      const { query, k, system, alpha, weights, tokenK, interventions, minScore } = request.body;
      const explain = request.body.explain ?? k <= EXPLAIN_DEFAULT_MAX_K;
      if (explain && k > MAX_EXPLAIN_K)
        throw new HttpError(
          400,
          'BAD_REQUEST',
          `body.explain: evidence for at most ${MAX_EXPLAIN_K} results (k ${k}): lower k or set explain false`,
        );
      const { results, interventions: found } = await store.searchWithInterventions({
        bank,
        query,
        k,
        system,
        explain,
        ...(alpha === undefined ? {} : { alpha }),
        ...(tokenK === undefined ? {} : { tokenK }),
        ...(weights === undefined ? {} : { weights }),
        ...(interventions === undefined ? {} : { interventions }),
        ...(minScore === undefined ? {} : { minScore }),
      });
      // The store's share of the request (encode + rank + explain), for clients and load runs.
      void reply.header('server-timing', `store;dur=${(performance.now() - t0).toFixed(2)}`);
      const out: SearchResponse = { results: results.map(searchResultToJson) };
      return found === undefined ? out : { ...out, interventions: interventionsToJson(found) };
    },
  );
}
