import type { Embedder } from '@bfe/store';

/** Options of {@link byRole}. */
export interface ByRoleOptions {
  /**
   * `queries` runs another graph of the passages' model (`--query-model`, checked compatible by
   * `assertQueryModel` before the encoders open): their graph hashes may differ. The result
   * carries the passages' hash, the one the store records.
   */
  readonly queryModel?: boolean;
}

/**
 * One embedder over two: queries encoded by `queries`, passages (adds and updates) by
 * `passages`, so that a search never waits in the encoder's queue behind a batch of added
 * memories (an encoder pool runs its calls in arrival order, one run per worker at a time).
 * Both must be the same model unless `options.queryModel`; the dimension must always agree.
 * Disposing the result disposes both.
 * @example
 * const embedder = byRole(await openEmbedderPool({ model, workers: 1 }), await openEmbedderPool({ model, workers: 1 }));
 * await embedder.encode(['what pet?'], 'query'); // on the first pool
 */
export function byRole(
  queries: Embedder,
  passages: Embedder,
  options: ByRoleOptions = {},
): Embedder {
  const sameModel = queries.model === passages.model || options.queryModel === true;
  if (!sameModel || queries.dim !== passages.dim)
    throw new Error(
      `byRole: one model for both roles, got ${queries.model}/${queries.dim} and ${passages.model}/${passages.dim}`,
    );
  return {
    model: passages.model,
    dim: passages.dim,
    encode: (texts, role, embed = {}) =>
      (role === 'query' ? queries : passages).encode(texts, role, embed),
    tokenText: (id) => passages.tokenText(id),
    async dispose() {
      await Promise.all([queries.dispose(), passages.dispose()]);
    },
  };
}
