/**
 * The systems a search ranks with: the experiment's training-free token systems (METHOD.md §6)
 * and `hybrid` (§8: pooled, sparse and BM25 fused). A module of its own (no imports), so the
 * wire format (`wire.ts`, `@bfe/store/wire`) loads without the scorer.
 */
export const SEARCH_SYSTEMS = [
  'sparse-fusion',
  'pooled',
  'no-fusion',
  'zero-floor',
  'maxsim',
  'maxsim-fusion',
  'hybrid',
] as const;

/** A system of {@link SEARCH_SYSTEMS}. */
export type SearchSystem = (typeof SEARCH_SYSTEMS)[number];
