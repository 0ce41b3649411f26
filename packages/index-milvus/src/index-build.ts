import type { TokenCollection } from './collection.js';
import { MilvusRequestError } from './errors.js';

interface IndexDescription {
  readonly indexed_rows?: string | number;
  readonly total_rows?: string | number;
  readonly pending_index_rows?: string | number;
  readonly state?: string;
  readonly index_state_fail_reason?: string;
}

/**
 * Resolves once the server has built the collection's vector index over every sealed row
 * (`describeIndex`: `indexed_rows` equal to `total_rows`, none pending), polling every
 * `intervalMs`. Until then a server searches the unindexed segments by brute force, so an
 * approximate index's recall is only its own after this. A failed build (which the server
 * retries forever) ends the wait with its reason.
 * @throws {MilvusRequestError} naming the server's reason when the build fails
 * @example
 * await MilvusTokenIndex.build(c, side); // insert and flush
 * await waitForIndex(c); // the HNSW graphs exist
 */
export async function waitForIndex(c: TokenCollection, intervalMs = 500): Promise<void> {
  for (;;) {
    const d = await c.client.describeIndex({ collection_name: c.name });
    const i = d.index_descriptions[0] as unknown as IndexDescription | undefined;
    if (i === undefined) throw new MilvusRequestError('describeIndex', `no index on ${c.name}`);
    const failed = i.index_state_fail_reason;
    if (i.state === 'Failed' || (failed !== undefined && failed !== '')) {
      throw new MilvusRequestError('index build', failed ?? String(i.state));
    }
    // No sealed rows (or a server that does not report them, as Milvus Lite): nothing to wait on.
    const total = Number(i.total_rows ?? 0);
    if (total === 0) return;
    if (Number(i.indexed_rows) >= total && Number(i.pending_index_rows ?? 0) === 0) return;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
