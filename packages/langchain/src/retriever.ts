import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';
import { Document } from '@langchain/core/documents';
import {
  hitMetadata,
  openBackend,
  type HitMetadata,
  type RetrieverOptions,
  type SearchBackend,
  type SearchQuery,
} from '@bfe/client';

/** A retriever's settings: the bank, `k`, `system`, a store or the service, and LangChain's own. */
export type BfeRetrieverInput = RetrieverOptions & BaseRetrieverInput;

/**
 * A LangChain.js retriever over a bfe memory bank: each query is one store search (in this
 * process, or through `bfe serve`), each result a `Document` whose `pageContent` is the memory's
 * text, `id` its id, and `metadata` its metadata with the search's fields over it: `id`,
 * `rank`, `score`, `pooled`, `sparse`, `bank`, `evidence` (token evidence, see `@bfe/store`).
 * Documents come in the store's ranking order.
 * @example
 * const retriever = new BfeRetriever({ store, bank: 'alice', k: 3 });
 * const docs = await retriever.invoke("What is the name of Alice's cat?");
 * docs[0]; // Document { pageContent: 'Alice adopted a grey cat…', id: 'm1', metadata: { rank: 1, score: 1.93, … } }
 */
export class BfeRetriever extends BaseRetriever<HitMetadata> {
  static override lc_name(): string {
    return 'BfeRetriever';
  }

  lc_namespace = ['bfe', 'retrievers'];

  readonly #backend: SearchBackend;
  readonly #query: Omit<SearchQuery, 'query'>;

  /** @throws {Error} for bad settings, naming each field. */
  constructor(fields: BfeRetrieverInput) {
    super(fields);
    const { backend, query } = openBackend(fields);
    this.#backend = backend;
    this.#query = query;
  }

  /**
   * @throws the store's errors in process (`DataError` for an unknown bank); `BfeServiceError`
   *   over HTTP (status and the service's code and message).
   */
  override async _getRelevantDocuments(query: string): Promise<Document<HitMetadata>[]> {
    const hits = await this.#backend.search({ ...this.#query, query });
    const { bank } = this.#query;
    return hits.map(
      (hit) =>
        new Document<HitMetadata>({
          id: hit.id,
          pageContent: hit.text,
          metadata: hitMetadata(hit, bank),
        }),
    );
  }
}
