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
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { terminalTableLines } from '@bfe/core';
import { readPerQueryJsonl } from '@bfe/eval';
import { repoRoot } from '../shared/paths.js';

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
  const out: string[] = [];
  let queries: string | undefined;
  for (const { tag, file } of inputs) {
    const lines = await readPerQueryJsonl(file);
    const ids = [...new Set(lines.map((l) => l.queryId))].sort().join('\n');
    if (queries !== undefined && ids !== queries)
      throw new Error(`${file} (${tag}) ranks other queries than the first input: no pairing`);
    queries = ids;
    for (const line of lines) {
      if (systems !== undefined && !systems.has(line.system)) continue;
      out.push(JSON.stringify({ ...line, system: `${line.system}-${tag}` }));
    }
  }
  return out;
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
  style: 'markdown' | 'plain',
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
    const table = terminalTableLines({
      head,
      align: head.map((_, c) => (c === 0 ? 'left' : 'right')),
      rows,
      style,
    });
    process.stdout.write(`\n**${m}**\n\n${table.join('\n')}\n`);
  }
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    options: {
      out: { type: 'string' },
      base: { type: 'string', default: '' },
      across: { type: 'string', default: '' },
      systems: { type: 'string' },
      metrics: { type: 'string', default: 'recall@10,ndcg@10' },
      markdown: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  if (values.out === undefined) throw new Error('--out <merged.jsonl> is required');
  const inputs = parseTagged(positionals);
  if (inputs.length === 0) throw new Error('give at least one TAG=<per-query.jsonl>');
  const systems = values.systems === undefined ? undefined : new Set(values.systems.split(','));
  const merged = await mergePerQuery(inputs, systems);
  const out = resolve(values.out);
  await writeFile(out, `${merged.join('\n')}\n`);
  process.stdout.write(`${out}: ${merged.length} lines from ${inputs.length} runs\n`);
  const metrics = values.metrics.split(',');
  const style = values.markdown ? 'markdown' : 'plain';
  const pairs = values.across
    .split(',')
    .filter((p) => p !== '')
    .map((p) => {
      const [a, b] = p.split(':');
      if (a === undefined || b === undefined) throw new Error(`--across wants A:B, got ${p}`);
      return [a, b] as const;
    });
  if (pairs.length > 0) printAcross(out, inputs, pairs, metrics, style);
  for (const base of values.base.split(',').filter((b) => b !== '')) {
    const { results } = bfeEval(out, base);
    const head = ['system', ...metrics.flatMap((m) => [m, `Δ ${m} vs ${base} [95% CI], p`])];
    const rows = results.systems.map((s) => [
      s.name,
      ...metrics.flatMap((m) => [
        (s.metrics[m] ?? NaN).toFixed(4),
        s.name === base ? '—' : formatDifference(s.comparisons?.[base]?.[m]),
      ]),
    ]);
    const table = terminalTableLines({
      head,
      align: head.map((_, c) => (c === 0 ? 'left' : 'right')),
      rows,
      style,
    });
    const n = results.systems[0]?.nQueries ?? 0;
    process.stdout.write(`\n${table.join('\n')}\n\n(${n} queries; bfe eval --base ${base})\n`);
  }
}

await main();
