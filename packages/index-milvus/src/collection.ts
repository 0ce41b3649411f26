import {
  ConsistencyLevelEnum,
  DataType,
  MilvusClient,
  type FieldType,
  type RowData,
} from '@zilliz/milvus2-sdk-node';
import { ConfigError } from '@bfe/core';
import { MilvusRequestError, checkStatus as check, classifyError, type Status } from './errors.js';
import {
  buildParams,
  grpcAddress,
  parseMilvusOptions,
  searchParams,
  type ResolvedMilvusOptions,
} from './options.js';

/** Field names of the token collection (one row per content token). */
export const FIELDS = {
  pk: 'pk',
  bank: 'bank_id',
  memory: 'memory_id',
  seq: 'seq',
  position: 'position',
  vector: 'vector',
} as const;

/** Longest bank id and memory id the collection stores (VARCHAR lengths). */
export const MAX_BANK_ID = 256;
export const MAX_MEMORY_ID = 512;

/** One memory to insert: its id, its write sequence and its content tokens `[n × dim]`. */
export interface MemoryRows {
  readonly id: string;
  /** The write that produced these vectors (a store's sequence; any constant for a fixed bank). */
  readonly seq: number;
  /** `[tokens × dim]`, a view is fine. */
  readonly vectors: Float32Array;
}

/** One proposed token: its memory, that memory's write sequence, its content-token position. */
export interface TokenHit {
  readonly bankId: string;
  readonly memoryId: string;
  readonly seq: number;
  readonly position: number;
  /** Milvus's float32 inner product. */
  readonly score: number;
}

/** A string literal of Milvus's filter language. */
export const literal = (s: string): string => JSON.stringify(s);

/**
 * The token collection on a Milvus server (Milvus Lite or a cluster; the same client code):
 * `pk` int64 (auto id), `bank_id` VARCHAR partition key, `memory_id` VARCHAR, `seq` int64,
 * `position` int32 (the token's place among its memory's content tokens), `vector`
 * FLOAT_VECTOR(dim) under a FLAT or HNSW inner-product index. Searches use Strong consistency,
 * so a write is visible to the next search without a flush.
 *
 * @example
 * const c = await TokenCollection.open({ address: 'milvus://127.0.0.1:19530' }, 384);
 * await c.insert('alice', [{ id: 'm1', seq: 1, vectors }]);
 * const hits = await c.search(q, rows, 80, 'bank_id in ["alice"]'); // hits[r]: TokenHit[]
 */
export class TokenCollection {
  readonly options: ResolvedMilvusOptions;
  readonly dim: number;
  readonly client: MilvusClient;
  readonly name: string;

  private constructor(client: MilvusClient, options: ResolvedMilvusOptions, dim: number) {
    this.client = client;
    this.options = options;
    this.dim = dim;
    this.name = options.collection;
  }

  /**
   * Connects, creates the collection with its index when missing (an existing one must have
   * the same dimension and index type), and loads it.
   * @throws {ConfigError} for bad options or an existing collection of another shape
   * @throws {MilvusRequestError} when the server refuses a request
   */
  static async open(options: unknown, dim: number): Promise<TokenCollection> {
    const o = parseMilvusOptions(options);
    const { address, ssl } = grpcAddress(o);
    const client = new MilvusClient({
      address,
      ssl,
      ...(o.caPem === undefined
        ? {}
        : {
            tls: {
              rootCertPath: o.caPem,
              ...(o.serverName === undefined ? {} : { serverName: o.serverName }),
            },
          }),
      timeout: o.timeoutMs,
      // A server that is away fails the call at once (UNAVAILABLE, retryable) instead of being
      // retried inside the SDK for minutes: the store falls back to its own segments.
      maxRetries: 1,
      logLevel: 'error',
      // The SDK pings every 10 s; Milvus Lite's Python gRPC server counts pings during a long
      // call (an insert on a busy machine) as abuse and drops the connection (GOAWAY, seen as
      // RESOURCE_EXHAUSTED "Bandwidth exhausted"). Once in 5 min is what gRPC servers allow.
      channelOptions: {
        'grpc.keepalive_time_ms': 300_000,
        'grpc.keepalive_permit_without_calls': 0,
        // A restarted server is found again within 2 s (gRPC's default backoff grows to 120 s,
        // failing every call meanwhile).
        'grpc.initial_reconnect_backoff_ms': 500,
        'grpc.max_reconnect_backoff_ms': 2_000,
      },
      ...(o.token === undefined ? {} : { token: o.token }),
      ...(o.database === undefined ? {} : { database: o.database }),
    });
    const c = new TokenCollection(client, o, dim);
    try {
      // The SDK connects in its constructor; a refused token or a failed handshake rejects
      // this promise, which nothing else awaits.
      await c.#rpc('connect', async () => {
        await client.connectPromise;
        return {};
      });
      await c.#ensure();
    } catch (error) {
      await client.closeConnection().catch(() => undefined);
      throw error;
    }
    return c;
  }

  /** One request: its status checked, a thrown gRPC error classified (`MilvusRequestError`). */
  async #rpc<T extends { status?: Status } | Status>(
    what: string,
    call: () => Promise<T>,
  ): Promise<T> {
    let res: T;
    try {
      res = await call();
    } catch (error) {
      throw classifyError(what, this.options.address, error);
    }
    return check(what, res);
  }

  async #ensure(): Promise<void> {
    const { client, name, dim } = this;
    const has = await this.#rpc('hasCollection', () =>
      client.hasCollection({ collection_name: name }),
    );
    if (has.value !== true) {
      // The schema is given field by field: the `dimension` shortcut of createCollection fails
      // on Milvus Lite 3.2.2 and leaves a half-made collection.
      const fields: FieldType[] = [
        { name: FIELDS.pk, data_type: DataType.Int64, is_primary_key: true, autoID: true },
        {
          name: FIELDS.bank,
          data_type: DataType.VarChar,
          max_length: MAX_BANK_ID,
          is_partition_key: true,
        },
        { name: FIELDS.memory, data_type: DataType.VarChar, max_length: MAX_MEMORY_ID },
        { name: FIELDS.seq, data_type: DataType.Int64 },
        { name: FIELDS.position, data_type: DataType.Int32 },
        { name: FIELDS.vector, data_type: DataType.FloatVector, dim },
      ];
      await this.#rpc('createCollection', () =>
        client.createCollection({
          collection_name: name,
          fields,
          consistency_level: 'Strong',
        }),
      );
      await this.#rpc('createIndex', () =>
        client.createIndex({
          collection_name: name,
          field_name: FIELDS.vector,
          index_type: this.options.indexType,
          metric_type: 'IP',
          params: buildParams(this.options),
        }),
      );
    } else {
      const d = await this.#rpc('describeCollection', () =>
        client.describeCollection({ collection_name: name }),
      );
      const vector = d.schema.fields.find((f) => f.name === FIELDS.vector);
      const have = Number(vector?.type_params?.find((p) => p.key === 'dim')?.value ?? NaN);
      if (have !== dim) {
        throw new ConfigError(
          `Milvus collection '${name}' holds ${have}-d vectors, not ${dim}-d: use another collection`,
        );
      }
      const idx = await this.#rpc('describeIndex', () =>
        client.describeIndex({ collection_name: name }),
      );
      const type = idx.index_descriptions[0]?.params.find((p) => p.key === 'index_type')?.value;
      if (type !== this.options.indexType) {
        throw new ConfigError(
          `Milvus collection '${name}' has a ${type ?? 'missing'} index, not ${this.options.indexType}`,
        );
      }
    }
    await this.#rpc('loadCollection', () => client.loadCollectionSync({ collection_name: name }));
  }

  /**
   * Inserts whole memories of one bank (batched by `insertBatch` rows; a memory's tokens never
   * span two requests). Returns the rows inserted.
   */
  async insert(bank: string, memories: readonly MemoryRows[]): Promise<number> {
    const dim = this.dim;
    let batch: RowData[] = [];
    let total = 0;
    const send = async (): Promise<void> => {
      if (batch.length === 0) return;
      const res = await this.#rpc('insert', () =>
        this.client.insert({ collection_name: this.name, data: batch }),
      );
      total += Number(res.insert_cnt);
      batch = [];
    };
    for (const m of memories) {
      const n = m.vectors.length / dim;
      if (!Number.isInteger(n))
        throw new Error(`memory '${m.id}': ${m.vectors.length} floats are not rows of ${dim}`);
      if (batch.length > 0 && batch.length + n > this.options.insertBatch) await send();
      for (let j = 0; j < n; j++) {
        batch.push({
          [FIELDS.bank]: bank,
          [FIELDS.memory]: m.id,
          [FIELDS.seq]: m.seq,
          [FIELDS.position]: j,
          [FIELDS.vector]: Array.from(m.vectors.subarray(j * dim, (j + 1) * dim)),
        });
      }
    }
    await send();
    return total;
  }

  /**
   * Seals the rows inserted so far into segments (`flushSync`). Milvus Lite searches rows that
   * are still in its write-ahead log far more slowly (measured: ≈ 3.4 s vs ≈ 0.8 s per 24-row
   * query over 1e5 tokens), so a bulk load ends with a flush.
   */
  async flush(): Promise<void> {
    await this.#rpc('flush', () => this.client.flushSync({ collection_names: [this.name] }));
  }

  /** Deletes every row of the listed memories of `bank` (every write sequence). */
  async deleteMemories(bank: string, ids: readonly string[]): Promise<void> {
    for (let i = 0; i < ids.length; i += 512) {
      const list = ids
        .slice(i, i + 512)
        .map(literal)
        .join(', ');
      await this.#rpc('delete', () =>
        this.client.delete({
          collection_name: this.name,
          filter: `${FIELDS.bank} == ${literal(bank)} and ${FIELDS.memory} in [${list}]`,
        }),
      );
    }
  }

  /** Every row of `bank`. */
  async dropBank(bank: string): Promise<void> {
    await this.#rpc('delete', () =>
      this.client.delete({
        collection_name: this.name,
        filter: `${FIELDS.bank} == ${literal(bank)}`,
      }),
    );
  }

  /**
   * The memories of `bank` the collection holds, with the write sequences of their rows,
   * ascending (read from each memory's position-0 rows; a memory without tokens has no rows;
   * two sequences: a sync was interrupted between insert and delete).
   */
  async memories(bank: string): Promise<Map<string, number[]>> {
    const out = new Map<string, number[]>();
    const filter = `${FIELDS.bank} == ${literal(bank)} and ${FIELDS.position} == 0`;
    // The SDK's iterator counts the rows first and reads that count without checking its status
    // (a TypeError when the server refuses): the same count is asked here first, checked.
    await this.#rpc('query', () =>
      this.client.query({
        collection_name: this.name,
        filter,
        output_fields: ['count(*)'],
        consistency_level: ConsistencyLevelEnum.Strong,
      }),
    );
    try {
      const iterator = (await this.client.queryIterator({
        collection_name: this.name,
        filter,
        output_fields: [FIELDS.memory, FIELDS.seq],
        batchSize: 4096,
        consistency_level: ConsistencyLevelEnum.Strong,
      })) as AsyncIterable<Record<string, unknown>[]>;
      for await (const rows of iterator) {
        for (const r of rows) {
          const id = String(r[FIELDS.memory]);
          const seqs = out.get(id) ?? [];
          seqs.push(Number(r[FIELDS.seq]));
          out.set(
            id,
            seqs.sort((a, b) => a - b),
          );
        }
      }
    } catch (error) {
      throw classifyError('query', this.options.address, error);
    }
    return out;
  }

  /**
   * Top-`limit` tokens per query row among the rows that pass `filter`, all rows in one request
   * (Strong consistency). Only the fields bfe reads are requested: without `output_fields` a
   * Milvus search returns the vectors too, and the primary key only when listed.
   */
  async search(
    queries: Float32Array,
    rows: number,
    limit: number,
    filter: string,
  ): Promise<TokenHit[][]> {
    const dim = this.dim;
    const data: number[][] = [];
    for (let r = 0; r < rows; r++) data.push(Array.from(queries.subarray(r * dim, (r + 1) * dim)));
    const params = searchParams(this.options, limit);
    const res = await this.#rpc('search', () =>
      this.client.search({
        collection_name: this.name,
        anns_field: FIELDS.vector,
        data,
        limit,
        filter,
        params,
        metric_type: 'IP',
        output_fields: [FIELDS.bank, FIELDS.memory, FIELDS.seq, FIELDS.position],
        consistency_level: ConsistencyLevelEnum.Strong,
      }),
    );
    // One query vector comes back as a flat list, several as a list per query.
    const results = res.results as unknown as unknown[];
    const lists = (
      results.length > 0 && Array.isArray(results[0]) ? results : rows === 1 ? [results] : results
    ) as Record<string, unknown>[][];
    if (lists.length !== rows) {
      throw new MilvusRequestError('search', `${lists.length} result lists for ${rows} queries`);
    }
    return lists.map((list) =>
      list.map((h) => ({
        bankId: String(h[FIELDS.bank]),
        memoryId: String(h[FIELDS.memory]),
        seq: Number(h[FIELDS.seq]),
        position: Number(h[FIELDS.position]),
        score: Number(h.score),
      })),
    );
  }

  /** Rows in the collection (all banks). */
  async count(): Promise<number> {
    // The SDK's count() reads its query's first row without checking the status (a TypeError
    // when the server refuses): the query is made here, its status checked.
    const res = await this.#rpc('count', () =>
      this.client.query({
        collection_name: this.name,
        filter: '',
        output_fields: ['count(*)'],
        consistency_level: ConsistencyLevelEnum.Strong,
      }),
    );
    return Number(res.data[0]?.['count(*)']);
  }

  /** Drops the whole collection (every bank). */
  async drop(): Promise<void> {
    await this.#rpc('dropCollection', () =>
      this.client.dropCollection({ collection_name: this.name }),
    );
  }

  async close(): Promise<void> {
    await this.client.closeConnection();
  }
}
