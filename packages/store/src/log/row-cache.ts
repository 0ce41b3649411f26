/**
 * A store's memory budget for what it reads from its segments — decoded segment rows and bank
 * views — least recently used first out. An entry larger than the budget is still kept until
 * the next one arrives, so a read never loads the same rows twice in a row. What a reader holds
 * stays alive after eviction; the cache only stops holding it.
 */
export class RowCache {
  readonly #entries = new Map<unknown, { value: unknown; bytes: number }>();
  #bytes = 0;
  #loads = 0;

  constructor(readonly budget: number) {}

  /** Bytes held now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Entries held now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Entries put since the cache was made (each a read or a build). */
  get loads(): number {
    return this.#loads;
  }

  /** The value under `key` (now the most recently used), or undefined. */
  get<T>(key: unknown): T | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.value as T;
  }

  /** Holds `value` under `key` (replacing what was there), then evicts down to the budget. */
  set(key: unknown, value: unknown, bytes: number): void {
    this.delete(key);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    this.#loads++;
    for (const [k, e] of this.#entries) {
      if (this.#bytes <= this.budget || k === key) break;
      this.#entries.delete(k);
      this.#bytes -= e.bytes;
    }
  }

  /**
   * Counts `bytes` more for the entry under `key` while it holds `value` (it grew: decoded at
   * first use), then evicts down to the budget.
   */
  grow(key: unknown, value: unknown, bytes: number): void {
    const e = this.#entries.get(key);
    if (e === undefined || e.value !== value) return;
    this.#entries.delete(key); // now the most recently used
    this.#entries.set(key, e);
    e.bytes += bytes;
    this.#bytes += bytes;
    for (const [k, old] of this.#entries) {
      if (this.#bytes <= this.budget || k === key) break;
      this.#entries.delete(k);
      this.#bytes -= old.bytes;
    }
  }

  delete(key: unknown): void {
    const e = this.#entries.get(key);
    if (e === undefined) return;
    this.#entries.delete(key);
    this.#bytes -= e.bytes;
  }
}
