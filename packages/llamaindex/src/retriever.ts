import type { QueryBundle } from '@llamaindex/core/query-engine';
import { BaseRetriever } from '@llamaindex/core/retriever';
import { TextNode, type NodeWithScore } from '@llamaindex/core/schema';
import { extractText } from '@llamaindex/core/utils';
import {
  hitMetadata,
  openBackend,
  type HitMetadata,
  type RetrieverOptions,
  type SearchBackend,
  type SearchQuery,
} from '@bfe/client';

/**
 * Metadata kept out of the text an LLM or an embedding model sees (`node.getContent(mode)`):
 * the search's numbers and its token evidence explain a ranking; they are not the memory.
 */
export const EXCLUDED_METADATA_KEYS = [
  'id',
  'rank',
  'score',
  'pooled',
  'sparse',
  'bank',
  'evidence',
];

/**
 * A LlamaIndex.TS retriever over a bfe memory bank: each query is one store search (in this
 * process, or through `bfe serve`), each result a `NodeWithScore` whose `score` is the store's
 * score and whose node is a `TextNode` with the memory's text, `id_` its id, and `metadata` its
 * metadata with the search's fields over it: `id`, `rank`, `score`, `pooled`, `sparse`,
 * `bank`, `evidence` (token evidence, see `@bfe/store`) — excluded from the LLM and embedding
 * views ({@link EXCLUDED_METADATA_KEYS}). Nodes come in the store's ranking order.
 * @example
 * const retriever = new BfeRetriever({ store, bank: 'alice', k: 3 });
 * const nodes = await retriever.retrieve({ query: "What is the name of Alice's cat?" });
 * nodes[0]; // { node: TextNode { id_: 'm1', text: 'Alice adopted a grey cat…', metadata: { rank: 1, … } }, score: 1.93 }
 */
export class BfeRetriever extends BaseRetriever {
  readonly #backend: SearchBackend;
  readonly #query: Omit<SearchQuery, 'query'>;

  /** @throws {Error} for bad settings, naming each field. */
  constructor(options: RetrieverOptions) {
    super();
    const { backend, query } = openBackend(options);
    this.#backend = backend;
    this.#query = query;
  }

  /**
   * Called by `retrieve`; a multi-part query is searched as the text of its text parts.
   * @throws the store's errors in process (`DataError` for an unknown bank); `BfeServiceError`
   *   over HTTP (status and the service's code and message).
   */
  override async _retrieve(params: QueryBundle): Promise<NodeWithScore<HitMetadata>[]> {
    const hits = await this.#backend.search({ ...this.#query, query: extractText(params.query) });
    const { bank } = this.#query;
    return hits.map((hit) => ({
      node: new TextNode<HitMetadata>({
        id_: hit.id,
        text: hit.text,
        metadata: hitMetadata(hit, bank),
        excludedLlmMetadataKeys: [...EXCLUDED_METADATA_KEYS],
        excludedEmbedMetadataKeys: [...EXCLUDED_METADATA_KEYS],
      }),
      score: hit.score,
    }));
  }
}
