import { Command } from 'commander';
import type { Results } from '@bfe/eval';
import { collect } from '../cli/options.js';

interface EvalOptions {
  perQuery: string;
  results?: string;
  ks?: string;
  subtasks?: string;
  base: string;
  resamples?: string;
  seed?: string;
  transitions: string[];
  json?: boolean;
}

/**
 * `bfe eval`: recomputes every metric, subtask figure and paired comparison from a
 * `per-query.jsonl` alone, and prints the table `bfe score` prints. When the lines carry each
 * query's cluster (bank component), the cluster intervals are recomputed too. With `--results`
 * it also takes that file's cut-offs, subtask order, seed, resamples and bank unit, and checks
 * that every figure it recomputes equals the file's. `--transitions from,to` prints the
 * pair's query-level transitions per subtask.
 */
export function evalCommand(): Command {
  return new Command('eval')
    .description('recompute every metric from per-query.jsonl and print the score table')
    .requiredOption('--per-query <file>', 'per-query.jsonl written by bfe score')
    .option('--results <file>', 'a results.json to take ks and subtasks from, and to check against')
    .option('--ks <list>', 'cut-offs (default: the results file’s, else 1,4,5,8,10,16,25,50)')
    .option(
      '--subtasks <list>',
      'subtasks in declared order (default: the results file’s, else first appearance)',
    )
    .option('--base <system>', 'the system the others are compared with', 'pooled')
    .option(
      '--resamples <n>',
      'bootstrap resamples and sign flips (default: the results file’s, else 10000)',
    )
    .option('--seed <n>', 'seed of the paired tests (default: the results file’s, else 42)')
    .option(
      '--transitions <from,to>',
      'print query-level transitions from → to: recoveries, reverse, both hit, both miss per subtask (repeatable, or a,b;c,d)',
      collect,
      [],
    )
    .option('--json', 'print the recomputed results as JSON')
    .action(async (opts: EvalOptions) => {
      const { parseEvalCliOptions } = await import('../score/options.js');
      const o = parseEvalCliOptions({
        perQuery: opts.perQuery,
        results: opts.results,
        ks: opts.ks,
        subtasks: opts.subtasks,
        base: opts.base,
        resamples: opts.resamples,
        seed: opts.seed,
        transitions: opts.transitions,
      });
      const [evalPkg, { readJsonFile }, { DataError }] = await Promise.all([
        import('@bfe/eval'),
        import('@bfe/datasets'),
        import('@bfe/core'),
      ]);
      const reference =
        o.results === undefined
          ? undefined
          : evalPkg.parseResults(await readJsonFile(o.results), o.results);
      const ks = o.ks ?? reference?.ks;
      const subtasks = o.subtasks ?? reference?.subtasks;
      const resamples =
        o.resamples ?? reference?.significance?.resamples ?? evalPkg.DEFAULT_RESAMPLES;
      const seed = o.seed ?? reference?.significance?.seed ?? evalPkg.DEFAULT_SEED;

      const lines = await evalPkg.readPerQueryJsonl(o.perQuery);
      const bySystem = evalPkg.recomputeFromPerQuery(lines, {
        ...(ks === undefined ? {} : { ks }),
        ...(subtasks === undefined ? {} : { subtasks }),
      });
      const systems = [...bySystem].map(([name, evaluation]) => ({ name, evaluation }));
      const hasBase = bySystem.has(o.base);
      const clusterOf = evalPkg.clustersFromPerQuery(lines);
      const clusters =
        clusterOf === undefined
          ? undefined
          : { unit: reference?.significance?.clusters?.unit ?? 'bank', of: clusterOf };
      const { checkTransitionPairs, renderTransitions } = await import('../score/transitions.js');
      checkTransitionPairs([...bySystem.keys()], o.transitions);
      // The predeclared pairs, the ones the results file holds, then the requested ones.
      const pairs = new Map<string, [string, string]>();
      for (const pair of [
        ...evalPkg.transitionPairsFor(bySystem.keys()),
        ...(reference?.transitions ?? [])
          .map((t): [string, string] => [t.from, t.to])
          .filter((pair) => pair.every((name) => bySystem.has(name))),
        ...o.transitions,
      ]) {
        pairs.set(pair.join('\u0000'), pair);
      }
      const results = evalPkg.buildResults({
        dataset: reference?.dataset ?? o.perQuery,
        split: reference?.split ?? 'per-query file',
        systems,
        // With --results: the bases that file compares with (pooled, and sparse fusion beside an
        // adapter or hybrid), so every comparison it holds is recomputed; else --base.
        compareTo:
          reference === undefined
            ? hasBase
              ? [o.base]
              : []
            : reference.systems
                .map((s) => s.name)
                .filter((name) =>
                  reference.systems.some((s) => s.comparisons?.[name] !== undefined),
                ),
        transitions: [...pairs.values()],
        resamples,
        seed,
        ...(clusters === undefined ? {} : { clusters }),
        // The gains NDCG used, recomputed from the grades the per-query lines carry.
        meta: { gains: systems[0]?.evaluation.gains ?? 'binary' },
      });

      let checked = '';
      if (reference !== undefined) {
        const mismatches = compareFigures(reference, results);
        if (mismatches.length > 0) {
          throw new DataError(
            `${o.perQuery} does not reproduce ${o.results}: ${mismatches.length} figures differ, e.g.\n  ${mismatches.slice(0, 8).join('\n  ')}`,
            { suggestion: 'Were both written by the same bfe score run?' },
          );
        }
        checked = `every figure equals ${o.results}`;
      }

      const { renderBudgetTable, renderScoreTable, subtaskComparisons, subtaskComparisonsJson } =
        await import('../score/table.js');
      const bySubtask = subtaskComparisons(systems, o.base, {
        resamples,
        seed,
        clusters: clusters?.of,
      });
      const shown = o.transitions.flatMap(([from, to]) =>
        (results.transitions ?? []).filter((t) => t.from === from && t.to === to),
      );
      if (opts.json === true) {
        const json = {
          results,
          subtaskComparisons: subtaskComparisonsJson(bySubtask),
          transitions: shown,
          checked: checked || null,
        };
        console.log(JSON.stringify(json, null, 2));
        return;
      }
      console.log(
        [
          `per-query  ${o.perQuery} (${lines.length} lines, ${systems.length} systems)`,
          `dataset    ${results.dataset}, split ${results.split}`,
          ...(checked === '' ? [] : [`checked    ${checked}`]),
          '',
          renderScoreTable(results, bySubtask, o.base),
          ...renderBudgetTable(results),
          ...renderTransitions(shown),
        ].join('\n'),
      );
    });
}

/** Every figure of `want` that `got` lacks or computes differently (exact equality). */
function compareFigures(want: Results, got: Results): string[] {
  const out: string[] = [];
  const byName = new Map(got.systems.map((s) => [s.name, s]));
  // Key order is not a figure: a cross-fitted file lists its comparisons in its folds' order.
  const canonical = (x: unknown): string =>
    JSON.stringify(x, (_key, v: unknown) =>
      v !== null && typeof v === 'object' && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v,
    );
  const same = (path: string, a: unknown, b: unknown): void => {
    if (canonical(a) !== canonical(b)) out.push(`${path}: ${canonical(a)} vs ${canonical(b)}`);
  };
  for (const s of want.systems) {
    const g = byName.get(s.name);
    if (g === undefined) {
      out.push(`system ${s.name}: missing from the per-query file`);
      continue;
    }
    same(`${s.name} nQueries`, s.nQueries, g.nQueries);
    same(`${s.name} metrics`, s.metrics, g.metrics);
    for (const [subtask, figures] of Object.entries(s.subtasks)) {
      same(`${s.name} subtask ${subtask}`, figures, g.subtasks[subtask]);
    }
    same(`${s.name} comparisons`, s.comparisons, g.comparisons);
  }
  for (const t of want.transitions ?? []) {
    const g = got.transitions?.find((x) => x.from === t.from && x.to === t.to);
    same(`transitions ${t.from} → ${t.to}`, t, g);
  }
  if (want.meta?.['gains'] !== undefined) same('gains', want.meta['gains'], got.meta?.['gains']);
  same('clusters', want.significance?.clusters, got.significance?.clusters);
  return out;
}
