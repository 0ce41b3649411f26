import { z } from 'zod';
import type { MemoryMeta } from '../types.js';
import type { SearchInterventions } from './search-interventions.js';
import type { EvidenceToken, SearchEvidence, SearchResult } from './search.js';
import type { Bm25Evidence } from './search-hybrid.js';
import { SEARCH_SYSTEMS } from './systems.js';

/**
 * The search wire format: a search's results (and interventions) as JSON, in one place. The
 * service writes them with {@link searchResultToJson} and {@link interventionsToJson} and
 * documents them with these schemas (`/openapi.json`); the HTTP client parses them with the same
 * schemas and reads them back with {@link searchResultFromJson} and
 * {@link interventionsFromJson}, so a search over HTTP returns exactly what the same search
 * returns in process. JSON has no NaN: a floored token's similarity (NaN in process) is `null`,
 * and a token piece the model cannot name (undefined in process) is `null`. Imported as
 * `@bfe/store/wire`, it loads zod and nothing of the store's runtime (no encoder, no scorer), so
 * an HTTP-only client stays light.
 */

const metaSchema = z.record(z.string(), z.unknown()).describe('JSON metadata of the memory');

const bestSchema = z.strictObject({
  memoryToken: z.number().int(),
  tokenId: z.number().int(),
  piece: z.string().nullable(),
  similarity: z.number(),
});

/** What a query token matched in a memory, or the floor it got: shared by evidence and interventions. */
const matchShape = {
  queryToken: z.number().int(),
  queryTokenId: z.number().int(),
  queryPiece: z.string().nullable(),
  memoryTokenId: z.number().int().describe('-1 when floored'),
  memoryPiece: z.string().nullable(),
  similarity: z.number().nullable().describe('null when floored'),
  floored: z.boolean(),
  floor: z.number(),
};

/** One query token's evidence (METHOD.md §2): what it matched, or the floor it got. */
export const evidenceTokenJsonSchema = z
  .strictObject({
    ...matchShape,
    memoryToken: z.number().int().describe('-1 when floored'),
    best: bestSchema.nullable().describe('diagnostic: the true best token, unused by the score'),
    contribution: z.number(),
    share: z.number(),
  })
  .meta({ id: 'EvidenceToken' });

/** `hybrid`'s BM25 branch of a result (METHOD.md §8): its score, z, part, and matched terms. */
export const bm25EvidenceJsonSchema = z
  .strictObject({
    weights: z.strictObject({ pooled: z.number(), sparse: z.number(), bm25: z.number() }),
    language: z.enum(['english', 'none']),
    score: z.number().describe('the memory’s BM25 score (IDF and average length over the bank)'),
    z: z.number(),
    part: z.number().describe('weights.bm25 · z'),
    length: z.number().int(),
    averageLength: z.number(),
    documents: z.number().int(),
    terms: z.array(
      z.strictObject({
        term: z.string(),
        queryCount: z.number().int(),
        tf: z.number().int(),
        df: z.number().int(),
        idf: z.number(),
        weight: z.number(),
        contribution: z.number(),
      }),
    ),
  })
  .meta({ id: 'Bm25Evidence' });

/** A result's evidence: its token evidence and the fused decomposition (METHOD.md §3). */
export const evidenceJsonSchema = z
  .strictObject({
    system: z.enum(SEARCH_SYSTEMS),
    matching: z.enum(['tail', 'zero', 'maxsim', 'none']),
    nQueryTokens: z.number().int(),
    k: z.number().int(),
    tokens: z.array(evidenceTokenJsonSchema),
    pooled: z.number(),
    sparse: z.number(),
    zPooled: z.number(),
    zSparse: z.number(),
    alpha: z.number(),
    pooledPart: z.number(),
    sparsePart: z.number(),
    score: z.number(),
    bm25: bm25EvidenceJsonSchema
      .optional()
      .describe('hybrid: the BM25 branch; then score = pooledPart + sparsePart + bm25.part'),
  })
  .meta({ id: 'Evidence' });

/** One ranked memory. */
export const searchResultJsonSchema = z
  .strictObject({
    id: z.string(),
    rank: z.number().int(),
    score: z.number(),
    pooled: z.number(),
    pooledRank: z
      .number()
      .int()
      .describe('rank by pooled score over the whole bank (a pooled search’s rank), however deep'),
    sparse: z.number(),
    relevance: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe(
        'calibrated P(relevant) from the absolute pooled and sparse scores: comparable across ' +
          'queries (minScore thresholds it); absent when no calibration fits the encoder',
      ),
    text: z.string(),
    meta: metaSchema.optional(),
    evidence: evidenceJsonSchema.optional(),
  })
  .meta({ id: 'SearchResult' });

/** The memory's excess over the floor per query token and its rank after each removal. */
export const interventionsJsonSchema = z
  .strictObject({
    id: z.string(),
    rank: z.number().int(),
    score: z.number(),
    sparse: z.number(),
    tokens: z.array(
      z.strictObject({
        ...matchShape,
        excess: z.number().describe('(max(t_i, best_i(m)) − t_i)/n_q'),
      }),
    ),
    removals: z.array(
      z.strictObject({
        label: z.string(),
        removed: z.array(z.number().int()),
        sparse: z.number(),
        score: z.number().describe('fused, with the original μ and σ'),
        rank: z.number().int(),
      }),
    ),
  })
  .meta({ id: 'Interventions' });

/** `POST /v1/banks/{bank}/search`'s answer. */
export const searchResponseJsonSchema = z.strictObject({
  results: z.array(searchResultJsonSchema),
  interventions: interventionsJsonSchema.optional(),
});

export type EvidenceJson = z.output<typeof evidenceJsonSchema>;
export type SearchResultJson = z.output<typeof searchResultJsonSchema>;
export type InterventionsJson = z.output<typeof interventionsJsonSchema>;
export type SearchResponseJson = z.output<typeof searchResponseJsonSchema>;

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);
const orNaN = (x: number | null): number => (x === null ? Number.NaN : x);

/** A result's evidence as JSON. Built field by field: it runs for every token of every result. */
function evidenceToJson(e: SearchEvidence): EvidenceJson {
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
    ...(e.bm25 === undefined ? {} : { bm25: bm25Copy(e.bm25) }),
  };
}

/** The BM25 branch field by field (the same shape in process and as JSON). */
function bm25Copy(b: Bm25Evidence): z.output<typeof bm25EvidenceJsonSchema> {
  const { pooled, sparse, bm25 } = b.weights;
  return {
    weights: { pooled, sparse, bm25 },
    language: b.language,
    score: b.score,
    z: b.z,
    part: b.part,
    length: b.length,
    averageLength: b.averageLength,
    documents: b.documents,
    terms: b.terms.map((t) => ({
      term: t.term,
      queryCount: t.queryCount,
      tf: t.tf,
      df: t.df,
      idf: t.idf,
      weight: t.weight,
      contribution: t.contribution,
    })),
  };
}

function evidenceFromJson(e: EvidenceJson): SearchEvidence {
  return {
    system: e.system,
    matching: e.matching,
    nQueryTokens: e.nQueryTokens,
    k: e.k,
    tokens: e.tokens.map((t): EvidenceToken => ({
      queryToken: t.queryToken,
      memoryToken: t.memoryToken,
      similarity: orNaN(t.similarity),
      floored: t.floored,
      floor: t.floor,
      best:
        t.best === null
          ? undefined
          : { memoryToken: t.best.memoryToken, similarity: t.best.similarity },
      contribution: t.contribution,
      share: t.share,
      queryTokenId: t.queryTokenId,
      queryPiece: t.queryPiece ?? undefined,
      memoryTokenId: t.memoryTokenId,
      memoryPiece: t.memoryPiece ?? undefined,
      bestTokenId: t.best === null ? -1 : t.best.tokenId,
      bestPiece: t.best === null ? undefined : (t.best.piece ?? undefined),
    })),
    pooled: e.pooled,
    sparse: e.sparse,
    zPooled: e.zPooled,
    zSparse: e.zSparse,
    alpha: e.alpha,
    pooledPart: e.pooledPart,
    sparsePart: e.sparsePart,
    score: e.score,
    ...(e.bm25 === undefined ? {} : { bm25: bm25Copy(e.bm25) }),
  };
}

/**
 * A search result as JSON ({@link searchResultJsonSchema}).
 * @example
 * JSON.stringify({ results: results.map(searchResultToJson) });
 */
export function searchResultToJson(r: SearchResult): SearchResultJson {
  return {
    id: r.id,
    rank: r.rank,
    score: r.score,
    pooled: r.pooled,
    pooledRank: r.pooledRank,
    sparse: r.sparse,
    ...(r.relevance === undefined ? {} : { relevance: r.relevance }),
    text: r.text,
    ...(r.meta === undefined ? {} : { meta: r.meta as Record<string, unknown> }),
    ...(r.evidence === undefined ? {} : { evidence: evidenceToJson(r.evidence) }),
  };
}

/**
 * The search result a parsed {@link searchResultJsonSchema} stands for: exactly the in-process
 * `SearchResult` (NaN for a floored similarity, undefined for an unnamed piece).
 */
export function searchResultFromJson(r: SearchResultJson): SearchResult {
  return {
    id: r.id,
    rank: r.rank,
    score: r.score,
    pooled: r.pooled,
    pooledRank: r.pooledRank,
    sparse: r.sparse,
    ...(r.relevance === undefined ? {} : { relevance: r.relevance }),
    text: r.text,
    meta: r.meta as MemoryMeta | undefined,
    ...(r.evidence === undefined ? {} : { evidence: evidenceFromJson(r.evidence) }),
  };
}

/** A search's interventions as JSON ({@link interventionsJsonSchema}). */
export function interventionsToJson(i: SearchInterventions): InterventionsJson {
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

/** The interventions a parsed {@link interventionsJsonSchema} stands for, as in process. */
export function interventionsFromJson(i: InterventionsJson): SearchInterventions {
  return {
    id: i.id,
    rank: i.rank,
    score: i.score,
    sparse: i.sparse,
    tokens: i.tokens.map((t) => ({
      queryToken: t.queryToken,
      queryTokenId: t.queryTokenId,
      queryPiece: t.queryPiece ?? undefined,
      memoryTokenId: t.memoryTokenId,
      memoryPiece: t.memoryPiece ?? undefined,
      similarity: orNaN(t.similarity),
      floor: t.floor,
      floored: t.floored,
      excess: t.excess,
    })),
    removals: i.removals.map((r) => ({
      label: r.label,
      removed: r.removed,
      sparse: r.sparse,
      score: r.score,
      rank: r.rank,
    })),
  };
}
