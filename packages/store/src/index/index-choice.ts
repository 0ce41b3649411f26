import type { MilvusOptions } from '@bfe/index-milvus';
import { milvusIndexFactory } from './milvus-index.js';
import type { TokenIndexFactory } from '../search/search.js';
import { storeIndexFactory } from './store-index.js';

/** The token index a store searches with, and the part of it the store owns (disposes at close). */
export interface ChosenIndex {
  readonly index: TokenIndexFactory;
  readonly own: { dispose: () => Promise<void> } | undefined;
}

/**
 * `StoreOptions.index` made concrete: absent → {@link storeIndexFactory} (owned); a factory →
 * used as given (the caller owns it); a Milvus address or options → {@link milvusIndexFactory}
 * (owned).
 */
export function chooseIndex(
  given: TokenIndexFactory | MilvusOptions | string | undefined,
  threads: number | undefined,
): ChosenIndex {
  if (given === undefined) {
    const made = storeIndexFactory(threads === undefined ? {} : { threads });
    return { index: made, own: made };
  }
  if (typeof given === 'function') return { index: given, own: undefined };
  const made = milvusIndexFactory(given);
  return { index: made, own: made };
}
