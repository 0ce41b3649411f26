import { benchmarkHash, type LoadedDataset, type LoadReportJson } from '@bfe/core';

/** Five-number-ish summary of a distribution. */
export interface Distribution {
  readonly min: number;
  readonly median: number;
  readonly mean: number;
  readonly max: number;
}

/** What `bfe data inspect --json` prints. */
export interface DatasetSummary {
  readonly dataset: string;
  readonly options: LoadedDataset['benchmark']['options'];
  readonly memories: number;
  readonly queries: number;
  readonly qrels: number;
  readonly banks: number;
  readonly subtasks: readonly string[];
  readonly categories: Record<string, number>;
  readonly repaired: LoadReportJson['repaired'];
  readonly unresolved: LoadReportJson['unresolved'];
  readonly dropped: LoadReportJson['dropped'];
  readonly issues: number;
  readonly candidatesPerQuery: Distribution;
  readonly relevantPerQuery: Distribution;
  readonly memoryChars: Distribution;
  readonly benchmarkHash: string;
  readonly sources: LoadedDataset['benchmark']['sources'];
}

/**
 * Counts and distributions of a loaded dataset. Candidate counts resolve bank candidates to
 * their memories, so the figure is the size of the ranked set the evaluator will see.
 */
export function summarize({ benchmark, labels, report }: LoadedDataset): DatasetSummary {
  const bankSizes = new Map<string, number>();
  const memoryChars: number[] = [];
  for (const m of benchmark.memories) {
    bankSizes.set(m.bankId, (bankSizes.get(m.bankId) ?? 0) + 1);
    memoryChars.push(m.text.length);
  }
  const categories: Record<string, number> = {};
  for (const s of benchmark.subtasks) categories[s] = 0;
  const candidates: number[] = [];
  const relevant: number[] = [];
  let qrels = 0;
  for (const q of benchmark.queries) {
    categories[q.category] = (categories[q.category] ?? 0) + 1;
    let n = q.candidateIds?.length ?? 0;
    for (const b of q.candidateBankIds ?? []) n += bankSizes.get(b) ?? 0;
    candidates.push(n);
    const r = labels.relevant(q.id).size;
    relevant.push(r);
    qrels += r;
  }
  const json = report.toJSON();
  return {
    dataset: benchmark.name,
    options: benchmark.options,
    memories: benchmark.memories.length,
    queries: benchmark.queries.length,
    qrels,
    banks: bankSizes.size,
    subtasks: benchmark.subtasks,
    categories,
    repaired: json.repaired,
    unresolved: json.unresolved,
    dropped: json.dropped,
    issues: json.issues,
    candidatesPerQuery: distribution(candidates),
    relevantPerQuery: distribution(relevant),
    memoryChars: distribution(memoryChars),
    benchmarkHash: benchmarkHash(benchmark),
    sources: benchmark.sources,
  };
}

function distribution(values: number[]): Distribution {
  if (values.length === 0) return { min: 0, median: 0, mean: 0, max: 0 };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { min: sorted[0]!, median, mean: sum / sorted.length, max: sorted[sorted.length - 1]! };
}
