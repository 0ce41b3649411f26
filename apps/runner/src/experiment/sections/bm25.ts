import { z } from 'zod';

/**
 * `scorer.bm25` (METHOD.md §8, "BM25"): how the `bm25` system and the hybrid's lexical branch
 * prepare text and count IDF. Either field left out takes its predeclared default
 * (`@bfe/scorer`'s `resolveBm25Options`); the section left out keeps the score stage's cache key as it was.
 *
 * - `language`: `english` (English elisions, stop words, Porter2 stems) or `none` (the
 *   Unicode words as they are).
 * - `idf`: `candidates` (over the query's candidate set) or `corpus` (over every memory of the
 *   benchmark).
 *
 * @example
 * bm25ConfigSchema.parse({ idf: 'corpus' }); // { idf: 'corpus' }
 */
export const bm25ConfigSchema = z.strictObject({
  language: z.enum(['english', 'none']).optional(),
  idf: z.enum(['candidates', 'corpus']).optional(),
});

/** `scorer.bm25` as parsed, or the same two choices from `bfe score`'s flags. */
export type Bm25Config = z.output<typeof bm25ConfigSchema>;
