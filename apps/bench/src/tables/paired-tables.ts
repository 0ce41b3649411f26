/**
 * Paired tables across runs of the same queries (truncation lengths, windows, a hybrid run):
 * merges several `per-query.jsonl` files into one, each system renamed `<system>-<tag>`, writes
 * it, then for each `--base` asks `bfe eval --per-query <merged> --base <base> --json` for every
 * system's figures and its paired difference with the base (stratified bootstrap CI and
 * sign-flip p, `bfe eval`'s defaults: 10,000 resamples, seed 42) and prints one table per base.
 * Runs pair only when they rank the same queries (same dataset, split and question subset); the
 * merge refuses files whose query sets differ.
 *
 * With `--across A:B,…` it also prints, per metric, one table of every system at each tag and
 * the same system's difference B − A for each pair (`bfe eval --base <system>-A`).
 *
 * pnpm bench:paired-tables --out merged.jsonl [--base sparse-fusion-t128,…]
 *   [--across t128:t256,w256:t256] [--systems pooled,maxsim,…] [--metrics recall@10,ndcg@10]
 *   [--markdown] t128=<run>/per-query.jsonl t256=<run>/per-query.jsonl …
 *
 * A tag's file may be a run folder (its `per-query.jsonl` is read).
 */
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { readPerQueryJsonl } from '@bfe/eval';
import { benchCommand, flag, list, parseCommand, runScript } from '../shared/cli.js';
import { repoRoot } from '../shared/paths.js';
import { out, printTable, type TableStyle } from '../shared/table.js';

/** One tagged input: `t256=<file or run folder>`. */
interface TaggedInput {
  readonly tag: string;
  readonly file: string;
}

/** Parses `TAG=PATH` positionals; a folder stands for its `per-query.jsonl`. */
function parseTagged(positionals: readonly string[]): TaggedInput[] {
  return positionals.map((p) => {
    const at = p.indexOf('=');
    if (at <= 0 || at === p.length - 1) throw new Error(`expected TAG=PATH, got ${p}`);
    const tag = p.slice(0, at);
    if (!/^[a-z0-9][a-z0-9._]*$/i.test(tag))
      throw new Error(`bad tag ${tag}: letters, digits, . _`);
    const path = resolve(p.slice(at + 1));
    const file = statSync(path).isDirectory() ? join(path, 'per-query.jsonl') : path;
    return { tag, file };
  });
}

/**
 * The merged lines: every line of every input with its system renamed `<system>-<tag>`, in
 * input order; only the systems listed in `systems` when given.
 * @throws Error when two inputs rank different query sets (they would not pair).
 */
async function mergePerQuery(
  inputs: readonly TaggedInput[],
  systems?: ReadonlySet<string>,
): Promise<string[]> {
  const merged: string[] = [];
  let queries: string | undefined;
  for (const { tag, file } of inputs) {
    const lines = await readPerQueryJsonl(file);
    const ids = [...new Set(lines.map((l) => l.queryId))].sort().join('\n');
    if (queries !== undefined && ids !== queries)
      throw new Error(`${file} (${tag}) ranks other queries than the first input: no pairing`);
    queries = ids;
    for (const line of lines) {
      if (systems !== undefined && !systems.has(line.system)) continue;
      merged.push(JSON.stringify({ ...line, system: `${line.system}-${tag}` }));
    }
  }
  return merged;
}

const differenceSchema = z.object({
  meanDiff: z.number(),
  ci95: z.tuple([z.number(), z.number()]),
  pValue: z.number(),
});
const evalJsonSchema = z.object({
  results: z.object({
    systems: z.array(
      z.object({
        name: z.string(),
        metrics: z.record(z.string(), z.number()),
        nQueries: z.number(),
        comparisons: z.record(z.string(), z.record(z.string(), differenceSchema)).optional(),
      }),
    ),
  }),
});
type EvalJson = z.infer<typeof evalJsonSchema>;

/** Runs `bfe eval --json` from source, as `pnpm bfe eval` does. */
function bfeEval(perQuery: string, base: string): EvalJson {
  const args = ['eval', '--per-query', perQuery, '--base', base, '--json'];
  const r = spawnSync(
    process.execPath,
    [
      '--conditions=@bfe/source',
      '--import',
      'tsx',
      join(repoRoot, 'apps/runner/src/bin.ts'),
      ...args,
    ],
    { cwd: repoRoot, encoding: 'utf8', maxBuffer: 1 << 28 },
  );
  if (r.status !== 0) throw new Error(`bfe ${args.join(' ')} failed:\n${r.stderr}`);
  return evalJsonSchema.parse(JSON.parse(r.stdout));
}

const signed = (x: number): string => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(4)}`;
const pText = (p: number): string => (p < 0.001 ? '<0.001' : p.toFixed(3));

/** `+0.0355 [+0.0210, +0.0507] p <0.001`, the form of BENCHMARKS.md's paired columns. */
function formatDifference(d: z.infer<typeof differenceSchema> | undefined): string {
  if (d === undefined) return '—';
  return `${signed(d.meanDiff)} [${signed(d.ci95[0])}, ${signed(d.ci95[1])}] p ${pText(d.pValue)}`;
}

/**
 * Per metric: every system's value at each tag, then per pair A:B the system's own B − A
 * (`bfe eval --base <system>-A`, one call per system and A).
 */
function printAcross(
  merged: string,
  inputs: readonly TaggedInput[],
  pairs: readonly (readonly [string, string])[],
  metrics: readonly string[],
  style: TableStyle,
): void {
  const tags = inputs.map((i) => i.tag);
  const evals = new Map<string, EvalJson>();
  const evalAt = (base: string): EvalJson => {
    let e = evals.get(base);
    if (e === undefined) evals.set(base, (e = bfeEval(merged, base)));
    return e;
  };
  const first = evalAt(`pooled-${tags[0]}`).results.systems;
  const suffix = `-${tags[0]}`;
  const systems = first
    .filter((s) => s.name.endsWith(suffix))
    .map((s) => s.name.slice(0, -suffix.length));
  for (const m of metrics) {
    const head = ['system', ...tags, ...pairs.map(([a, b]) => `${b} − ${a} [95% CI], p`)];
    const rows = systems.map((sys) => {
      const values = tags.map((t) => {
        const v = first.find((s) => s.name === `${sys}-${t}`)?.metrics[m];
        return v === undefined ? '—' : v.toFixed(4);
      });
      const diffs = pairs.map(([a, b]) => {
        const res = evalAt(`${sys}-${a}`).results.systems.find((s) => s.name === `${sys}-${b}`);
        return formatDifference(res?.comparisons?.[`${sys}-${a}`]?.[m]);
      });
      return [sys, ...values, ...diffs];
    });
    out();
    out(`**${m}**`);
    out();
    printTable({ head, rows }, style);
  }
}

interface Options {
  out: string;
  base: string[];
  across: string[];
  systems?: string[];
  metrics: string[];
  markdown?: boolean;
}

const command = benchCommand(
  'bench:paired-tables',
  'paired tables across runs of the same queries, through bfe eval',
)
  .argument('<inputs...>', 'TAG=<per-query.jsonl or run folder>, one per run')
  .requiredOption('--out <file>', 'the merged per-query.jsonl to write')
  .addOption(flag('--base <list>', 'one table per base system: every system against it', list, ''))
  .addOption(
    flag('--across <list>', 'A:B tag pairs: each system at B against itself at A', list, ''),
  )
  .addOption(flag('--systems <list>', 'only these systems (default: all)', list))
  .addOption(flag('--metrics <list>', 'metrics of the tables', list, 'recall@10,ndcg@10'))
  .option('--markdown', 'print the tables as Markdown');

async function main(): Promise<void> {
  const { options, args } = parseCommand<Options>(command);
  const inputs = parseTagged(args);
  const systems = options.systems === undefined ? undefined : new Set(options.systems);
  const merged = await mergePerQuery(inputs, systems);
  const file = resolve(options.out);
  await writeFile(file, `${merged.join('\n')}\n`);
  out(`${file}: ${merged.length} lines from ${inputs.length} runs`);
  const { metrics } = options;
  const style = { markdown: options.markdown };
  const pairs = options.across.map((p) => {
    const [a, b] = p.split(':');
    if (a === undefined || b === undefined) throw new Error(`--across wants A:B, got ${p}`);
    return [a, b] as const;
  });
  if (pairs.length > 0) printAcross(file, inputs, pairs, metrics, style);
  for (const base of options.base) {
    const { results } = bfeEval(file, base);
    const head = ['system', ...metrics.flatMap((m) => [m, `Δ ${m} vs ${base} [95% CI], p`])];
    const rows = results.systems.map((s) => [
      s.name,
      ...metrics.flatMap((m) => [
        (s.metrics[m] ?? NaN).toFixed(4),
        s.name === base ? '—' : formatDifference(s.comparisons?.[base]?.[m]),
      ]),
    ]);
    out();
    printTable({ head, rows }, style);
    const n = results.systems[0]?.nQueries ?? 0;
    out();
    out(`(${n} queries; bfe eval --base ${base})`);
  }
}

await runScript('bench:paired-tables', main);
