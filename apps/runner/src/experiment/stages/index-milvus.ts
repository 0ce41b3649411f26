import { createHash } from 'node:crypto';
import {
  fileTokenStore,
  flatTokenStore,
  type SimilarityKernel,
  type TokenIndex,
  type TokenStore,
} from '@bfe/index';

/** The bank as the Milvus backend reads it: ids, banks, offsets and the float32 tokens. */
export interface MilvusBank {
  readonly dim: number;
  readonly memories: {
    readonly ids: readonly string[];
    readonly bankIds?: readonly string[] | undefined;
    readonly tokenOffsets: Int32Array;
    readonly tokenVectors?: Float32Array | undefined;
    readonly tokenFile?: {
      readonly path: string;
      readonly dtype: 'float32' | 'float16';
      readonly segments: ReadonlyArray<{ readonly offset: number; readonly rows: number }>;
    };
  };
}

/**
 * The index's key parts from a `milvus://` URL: the index type and the parameters that change
 * what it proposes (never the address or the token: the same index anywhere is the same result).
 */
export async function milvusKeyConfig(url: string): Promise<Record<string, unknown>> {
  const { parseMilvusOptions, buildParams, searchParams } = await import('@bfe/index-milvus');
  const o = parseMilvusOptions(url, {});
  return { indexType: o.indexType, build: buildParams(o), search: searchParams(o, 0) };
}

/**
 * Opens the experiment's bank in a Milvus collection (`index.backend: milvus`, `index.milvus`: a
 * `milvus://` or `https://` URL whose query names the index, `?index=HNSW&M=16&ef=128`; the
 * token from `BFE_MILVUS_TOKEN`). The collection is named from the encode artifact's key and
 * the index (unless the URL names one), so it holds this bank's tokens alone: when its row
 * count is not the bank's (new, or a load cut short), it is dropped and filled again. Searches
 * then propose from Milvus and rescore exactly (FLAT: the exact backend's results).
 */
export async function openMilvusIndex(
  url: string,
  encodeKey: string,
  bank: MilvusBank,
  kernel: SimilarityKernel,
): Promise<{ index: TokenIndex; dispose: () => void }> {
  const { MilvusTokenIndex, TokenCollection, milvusUrlOptions, parseMilvusOptions, waitForIndex } =
    await import('@bfe/index-milvus');
  const given = milvusUrlOptions(url);
  const o = parseMilvusOptions(url);
  const hash = createHash('sha256')
    .update(`${encodeKey}\n${JSON.stringify(await milvusKeyConfig(url))}`)
    .digest('hex');
  const options = { ...given, ...(o.token === undefined ? {} : { token: o.token }) };
  const name = (given.collection as string | undefined) ?? `bfe_run_${hash.slice(0, 24)}`;
  const { memories, dim } = bank;
  const n = memories.tokenOffsets[memories.tokenOffsets.length - 1]!;
  let tokens: TokenStore & { close?: () => void };
  if (memories.tokenVectors !== undefined) tokens = flatTokenStore(memories.tokenVectors, dim);
  else if (memories.tokenFile !== undefined)
    tokens = fileTokenStore({ ...memories.tokenFile, dim });
  else throw new Error('openMilvusIndex: the bank has neither token vectors nor a token file');
  const side = {
    tokens,
    tokenOffsets: memories.tokenOffsets,
    ids: memories.ids,
    banks: memories.bankIds ?? memories.ids.map(() => 'all'),
  };
  let c = await TokenCollection.open({ ...options, collection: name }, dim);
  try {
    const rows = await c.count();
    if (rows !== n) {
      if (rows > 0) {
        await c.drop();
        await c.close();
        c = await TokenCollection.open({ ...options, collection: name }, dim);
      }
      await MilvusTokenIndex.build(c, side);
    }
    // An approximate index proposes as itself only once built (before, by brute force).
    await waitForIndex(c);
  } catch (error) {
    await c.close();
    tokens.close?.();
    throw error;
  }
  const index = new MilvusTokenIndex(c, side, { kernel });
  return {
    index,
    dispose: () => {
      void c.close();
      tokens.close?.();
    },
  };
}
