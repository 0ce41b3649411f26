/**
 * Relevance labels (qrels), kept apart from {@link Benchmark} so that only the evaluator and
 * the trainer can receive them. Grades are integers > 0, kept as given (LMEB qrels may carry
 * 2, 3, …; the other loaders give 1): the evaluator's NDCG uses them as gains, recall counts
 * every labelled memory. Absent pairs are non-relevant.
 *
 * @example
 * const labels = new RelevanceLabels();
 * labels.add('q1', 'conv-26:D1:3', 1);
 * labels.relevant('q1'); // ReadonlyMap { 'conv-26:D1:3' => 1 }
 */
export class RelevanceLabels {
  readonly #byQuery = new Map<string, Map<string, number>>();
  #pairs = 0;

  /** Adds one judgement; a repeated pair keeps the larger grade. */
  add(queryId: string, memoryId: string, grade = 1): void {
    if (!Number.isInteger(grade) || grade <= 0) {
      throw new Error(`RelevanceLabels.add: grade must be a positive integer, got ${grade}`);
    }
    let docs = this.#byQuery.get(queryId);
    if (docs === undefined) {
      docs = new Map();
      this.#byQuery.set(queryId, docs);
    }
    const previous = docs.get(memoryId);
    if (previous === undefined) this.#pairs += 1;
    docs.set(memoryId, Math.max(previous ?? 0, grade));
  }

  /** Relevant memories of a query (empty when it has none). */
  relevant(queryId: string): ReadonlyMap<string, number> {
    return this.#byQuery.get(queryId) ?? EMPTY;
  }

  has(queryId: string): boolean {
    return (this.#byQuery.get(queryId)?.size ?? 0) > 0;
  }

  /** Query ids with at least one judgement, in insertion order. */
  queryIds(): string[] {
    return [...this.#byQuery.keys()];
  }

  /** Number of (query, memory) pairs. */
  get pairCount(): number {
    return this.#pairs;
  }

  /** Removes every judgement of a query (used when a query is dropped). */
  delete(queryId: string): void {
    const docs = this.#byQuery.get(queryId);
    if (docs === undefined) return;
    this.#pairs -= docs.size;
    this.#byQuery.delete(queryId);
  }

  /** A copy restricted to the given query ids (e.g. one split's). */
  restrictTo(queryIds: Iterable<string>): RelevanceLabels {
    const out = new RelevanceLabels();
    for (const q of queryIds) {
      for (const [m, g] of this.relevant(q)) out.add(q, m, g);
    }
    return out;
  }

  /** TREC-style rows `[queryId, memoryId, grade]`, in insertion order. */
  toRows(): Array<[string, string, number]> {
    const rows: Array<[string, string, number]> = [];
    for (const [q, docs] of this.#byQuery) for (const [m, g] of docs) rows.push([q, m, g]);
    return rows;
  }
}

const EMPTY: ReadonlyMap<string, number> = new Map();
