import { serializerCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { MemoryStore, SearchEvidence, SearchInterventions, SearchResult } from '@bfe/store';
import { reachBank, type App } from './access.js';
import {
  bankParams,
  errorSchema,
  searchBodySchema,
  searchResponseSchema,
  type searchResultSchema,
} from './schemas.js';

type ResultBody = z.output<typeof searchResultSchema>;
type EvidenceBody = NonNullable<ResultBody['evidence']>;

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** The store's evidence as JSON: NaN (a floored similarity) becomes null, pieces null if unknown. */
export function evidenceBody(e: SearchEvidence): EvidenceBody {
  return {
    system: e.system,
    matching: e.matching,
    nQueryTokens: e.nQueryTokens,
    k: e.k,
    tokens: e.tokens.map((t) => ({
      queryToken: t.queryToken,
      queryTokenId: t.queryTokenId,
      queryPiece: t.queryPiece ?? null,
      memoryToken: t.memoryToken,
      memoryTokenId: t.memoryTokenId,
      memoryPiece: t.memoryPiece ?? null,
      similarity: t.floored ? null : finite(t.similarity),
      floored: t.floored,
      floor: t.floor,
      best:
        t.best === undefined
          ? null
          : {
              memoryToken: t.best.memoryToken,
              tokenId: t.bestTokenId,
              piece: t.bestPiece ?? null,
              similarity: t.best.similarity,
            },
      contribution: t.contribution,
      share: t.share,
    })),
    pooled: e.pooled,
    sparse: e.sparse,
    zPooled: e.zPooled,
    zSparse: e.zSparse,
    alpha: e.alpha,
    pooledPart: e.pooledPart,
    sparsePart: e.sparsePart,
    score: e.score,
  };
}

/** A search result as JSON. */
export function resultBody(r: SearchResult): ResultBody {
  return {
    id: r.id,
    rank: r.rank,
    score: r.score,
    pooled: r.pooled,
    pooledRank: r.pooledRank,
    sparse: r.sparse,
    text: r.text,
    ...(r.meta === undefined ? {} : { meta: r.meta as ResultBody['meta'] }),
    ...(r.evidence === undefined ? {} : { evidence: evidenceBody(r.evidence) }),
  };
}

type SearchResponse = z.output<typeof searchResponseSchema>;

/** The store's interventions as JSON: NaN (a floored similarity) null, unknown pieces null. */
export function interventionsBody(
  i: SearchInterventions,
): NonNullable<SearchResponse['interventions']> {
  return {
    id: i.id,
    rank: i.rank,
    score: i.score,
    sparse: i.sparse,
    tokens: i.tokens.map((t) => ({
      queryToken: t.queryToken,
      queryTokenId: t.queryTokenId,
      queryPiece: t.queryPiece ?? null,
      memoryTokenId: t.memoryTokenId,
      memoryPiece: t.memoryPiece ?? null,
      similarity: t.floored ? null : finite(t.similarity),
      floor: t.floor,
      floored: t.floored,
      excess: t.excess,
    })),
    removals: i.removals.map((r) => ({
      label: r.label,
      removed: [...r.removed],
      sparse: r.sparse,
      score: r.score,
      rank: r.rank,
    })),
  };
}

/** `POST /v1/banks/{bank}/search`: ranked memories with token evidence. */
export function searchRoutes(app: App, store: MemoryStore): void {
  app.post(
    '/v1/banks/:bank/search',
    {
      // A 200 body is built field by field by `resultBody` (typed by the schema), so it is
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
      const out: SearchResponse = { results: results.map(resultBody) };
      return found === undefined ? out : { ...out, interventions: interventionsBody(found) };
    },
  );
}
