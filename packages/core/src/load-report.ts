import { z } from 'zod';

/** One detail line of a load report: which item, and what happened to it. */
export interface ReportItem {
  readonly id: string;
  readonly detail: string;
}

/** A record that failed validation: the file, the record and the field path, as zod saw it. */
export interface LoadIssue {
  readonly file: string;
  readonly record: string;
  readonly path: string;
  readonly message: string;
}

/** The JSON form of a {@link LoadReport}, as printed by the CLI and saved beside a run. */
export interface LoadReportJson {
  readonly dataset: string;
  readonly repaired: Record<string, number>;
  readonly dropped: Record<string, number>;
  readonly unresolved: Record<string, number>;
  readonly issues: number;
  readonly details: {
    readonly repaired: Record<string, ReportItem[]>;
    readonly dropped: Record<string, ReportItem[]>;
    readonly unresolved: Record<string, ReportItem[]>;
    readonly issues: LoadIssue[];
  };
}

/**
 * Collects what a loader repaired, what it could not resolve and what it dropped, per item,
 * so that no row is lost silently and no bad row crashes a load without a message.
 */
export class LoadReport {
  readonly #repaired = new Map<string, ReportItem[]>();
  readonly #dropped = new Map<string, ReportItem[]>();
  readonly #unresolved = new Map<string, ReportItem[]>();
  readonly #issues: LoadIssue[] = [];

  constructor(readonly dataset: string) {}

  /** A malformed value was rewritten into a usable one (e.g. evidence `'D30:05'` → `D30:5`). */
  repair(kind: string, id: string, detail: string): void {
    push(this.#repaired, kind, { id, detail });
  }

  /** A reference could not be resolved; the item may still be kept (e.g. one bad evidence id). */
  unresolved(kind: string, id: string, detail: string): void {
    push(this.#unresolved, kind, { id, detail });
  }

  /** An item was left out of the benchmark, with the reason. */
  drop(reason: string, id: string, detail = ''): void {
    push(this.#dropped, reason, { id, detail });
  }

  /** A record failed validation; it is dropped under `invalid-record` too. */
  issue(issue: LoadIssue): void {
    this.#issues.push(issue);
    this.drop('invalid-record', issue.record, `${issue.path}: ${issue.message}`);
  }

  droppedCount(reason?: string): number {
    return count(this.#dropped, reason);
  }

  repairedCount(kind?: string): number {
    return count(this.#repaired, kind);
  }

  get issues(): readonly LoadIssue[] {
    return this.#issues;
  }

  toJSON(): LoadReportJson {
    return {
      dataset: this.dataset,
      repaired: counts(this.#repaired),
      dropped: counts(this.#dropped),
      unresolved: counts(this.#unresolved),
      issues: this.#issues.length,
      details: {
        repaired: Object.fromEntries(this.#repaired),
        dropped: Object.fromEntries(this.#dropped),
        unresolved: Object.fromEntries(this.#unresolved),
        issues: [...this.#issues],
      },
    };
  }
}

/**
 * Validates one record against a zod schema; on failure records an issue per zod problem
 * (file, record, field path) and returns `undefined` instead of throwing.
 */
export function validateRecord<S extends z.ZodType>(
  schema: S,
  value: unknown,
  where: { file: string; record: string },
  report: LoadReport,
): z.infer<S> | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const first = result.error.issues[0];
  const path = first === undefined ? '' : formatPath(first.path);
  const message = result.error.issues
    .map((i) => `${formatPath(i.path) || '(root)'}: ${i.message}`)
    .join('; ');
  report.issue({ file: where.file, record: where.record, path, message });
  return undefined;
}

/** `['turns', 3, 'text']` → `turns[3].text`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

function push(map: Map<string, ReportItem[]>, key: string, item: ReportItem): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [item]);
  else list.push(item);
}

function counts(map: Map<string, ReportItem[]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of map) out[k] = v.length;
  return out;
}

function count(map: Map<string, ReportItem[]>, key?: string): number {
  if (key !== undefined) return map.get(key)?.length ?? 0;
  let n = 0;
  for (const v of map.values()) n += v.length;
  return n;
}

const countsByReason = z.record(z.string(), z.int().nonnegative());

/**
 * A load report's counts, as a run's `results.json` (`load`), its terminal output and its
 * `report.md` carry them: totals of what loading dropped, repaired and left unresolved, and
 * the count per reason. `issues` (records that failed validation, malformed lines included)
 * are part of `dropped` too, under `invalid-record`.
 * @example
 * loadSummarySchema.parse(summarizeLoad(report.toJSON()));
 * // { dataset: 'lmeb:base', dropped: 3, repaired: 0, unresolved: 1, issues: 2,
 * //   reasons: { dropped: { 'invalid-record': 2, 'duplicate-memory-id': 1 }, repaired: {},
 * //   unresolved: { 'qrels-unknown-doc': 1 } } }
 */
export const loadSummarySchema = z.strictObject({
  dataset: z.string().min(1),
  dropped: z.int().nonnegative(),
  repaired: z.int().nonnegative(),
  unresolved: z.int().nonnegative(),
  issues: z.int().nonnegative(),
  reasons: z.strictObject({
    dropped: countsByReason,
    repaired: countsByReason,
    unresolved: countsByReason,
  }),
});
/** See {@link loadSummarySchema}. */
export type LoadSummary = z.infer<typeof loadSummarySchema>;

/** The counts of a load report's JSON form ({@link loadSummarySchema}). */
export function summarizeLoad(json: LoadReportJson): LoadSummary {
  const total = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
  return {
    dataset: json.dataset,
    dropped: total(json.dropped),
    repaired: total(json.repaired),
    unresolved: total(json.unresolved),
    issues: json.issues,
    reasons: { dropped: json.dropped, repaired: json.repaired, unresolved: json.unresolved },
  };
}

/**
 * One line for people: `3 dropped (2 invalid-record, 1 duplicate-memory-id); 1 unresolved
 * (1 qrels-unknown-doc)`, or `nothing dropped, repaired or unresolved`.
 */
export function formatLoadSummary(s: LoadSummary): string {
  const part = (n: number, label: string, reasons: Record<string, number>): string[] =>
    n === 0
      ? []
      : [
          `${n} ${label} (${Object.entries(reasons)
            .map(([k, v]) => `${v} ${k}`)
            .join(', ')})`,
        ];
  const parts = [
    ...part(s.dropped, 'dropped', s.reasons.dropped),
    ...part(s.repaired, 'repaired', s.reasons.repaired),
    ...part(s.unresolved, 'unresolved', s.reasons.unresolved),
  ];
  return parts.length === 0 ? 'nothing dropped, repaired or unresolved' : parts.join('; ');
}
