import { RecordHasher } from './hash.js';
import type { RelevanceLabels } from './labels.js';
import type { LoadReport } from './load-report.js';
import type { Benchmark } from './schemas.js';

/**
 * What a dataset loader returns: the label-free benchmark, its labels apart, and the report
 * of everything repaired, unresolved or dropped on the way.
 */
export interface LoadedDataset {
  readonly benchmark: Benchmark;
  readonly labels: RelevanceLabels;
  readonly report: LoadReport;
  /**
   * Memory id → the id in the source file, where the loader renamed memories (LongMemEval's
   * session ids name answer sessions `answer_…`, so they would reveal gold). Only per-query
   * output for people may use it; no stage that ranks or trains reads it.
   */
  readonly sourceIds?: ReadonlyMap<string, string>;
}

/**
 * Content hash of a benchmark (name, options, memories, queries, subtasks, source hashes),
 * streamed record by record so large benchmarks never become one string. Labels are not part
 * of it: a split or an encoded bank keyed by this hash cannot depend on gold.
 */
export function benchmarkHash(benchmark: Benchmark): string {
  const hasher = new RecordHasher();
  hasher.add({
    name: benchmark.name,
    options: benchmark.options,
    subtasks: benchmark.subtasks,
    sources: benchmark.sources,
    memories: benchmark.memories.length,
    queries: benchmark.queries.length,
  });
  for (const m of benchmark.memories) hasher.add(m);
  for (const q of benchmark.queries) hasher.add(q);
  return hasher.digest();
}
