import type { Embedder } from '@bfe/store';

/**
 * One embedder over two: queries encoded by `queries`, passages (adds and updates) by
 * `passages`, so that a search never waits in the encoder's queue behind a batch of added
 * memories (an encoder pool runs its calls in arrival order, one run per worker at a time).
 * Both must be the same model; disposing the result disposes both.
 * @example
 * const embedder = byRole(await openEmbedderPool({ model, workers: 1 }), await openEmbedderPool({ model, workers: 1 }));
 * await embedder.encode(['what pet?'], 'query'); // on the first pool
 */
export function byRole(queries: Embedder, passages: Embedder): Embedder {
  if (queries.model !== passages.model || queries.dim !== passages.dim)
    throw new Error(
      `byRole: one model for both roles, got ${queries.model}/${queries.dim} and ${passages.model}/${passages.dim}`,
    );
  return {
    model: queries.model,
    dim: queries.dim,
    encode: (texts, role, options = {}) =>
      (role === 'query' ? queries : passages).encode(texts, role, options),
    tokenText: (id) => queries.tokenText(id),
    async dispose() {
      await Promise.all([queries.dispose(), passages.dispose()]);
    },
  };
}
