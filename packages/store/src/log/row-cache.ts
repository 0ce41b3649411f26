/**
 * A store's memory budget for what it reads from its segments — decoded segment rows and bank
 * views — least recently used first out. An entry larger than the budget is still kept until
 * the next one arrives, so a read never loads the same rows twice in a row. What a reader holds
 * stays alive after eviction; the cache only stops holding it.
 */
export class RowCache {
  readonly #entries = new Map<unknown, { value: unknown; bytes: number }>();
  /** Entries that hold parts of another (a view reading a segment's states in place). */
  readonly #dependents = new Map<unknown, Set<unknown>>();
  readonly #dependsOn = new Map<unknown, readonly unknown[]>();
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

  /** Whether an entry is held under `key` (its place in the order unchanged). */
  has(key: unknown): boolean {
    return this.#entries.has(key);
  }

  /** The value under `key` (now the most recently used), or undefined. */
  get<T>(key: unknown): T | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, e);
    return e.value as T;
  }

  /**
   * Holds `value` under `key` (replacing what was there), then evicts down to the budget.
   * `dependsOn`: entries whose bytes `value` reads in place (counted there, not in `bytes`):
   * when one of them goes, so does this entry, so nothing the cache stopped counting stays held
   * by it.
   */
  set(key: unknown, value: unknown, bytes: number, dependsOn: readonly unknown[] = []): void {
    this.delete(key);
    this.#entries.set(key, { value, bytes });
    this.#bytes += bytes;
    this.#loads++;
    if (dependsOn.length > 0) {
      this.#dependsOn.set(key, dependsOn);
      for (const d of dependsOn) {
        let set = this.#dependents.get(d);
        if (set === undefined) this.#dependents.set(d, (set = new Set()));
        set.add(key);
      }
    }
    this.#evict(key);
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
    this.#evict(key);
  }

  /** Drops the least recently used entries (never `keep`) until the budget holds. */
  #evict(keep: unknown): void {
    while (this.#bytes > this.budget) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true || oldest.value === keep) break;
      this.delete(oldest.value);
    }
  }

  /** Drops `key`'s entry, and the entries that read it in place. */
  delete(key: unknown): void {
    const e = this.#entries.get(key);
    if (e !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= e.bytes;
    }
    for (const d of this.#dependsOn.get(key) ?? []) this.#dependents.get(d)?.delete(key);
    this.#dependsOn.delete(key);
    const dependents = this.#dependents.get(key);
    if (dependents === undefined) return;
    this.#dependents.delete(key);
    for (const k of dependents) this.delete(k);
  }
}
