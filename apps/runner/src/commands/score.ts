import { Command } from 'commander';
import { collect, parseSetOptions } from '../cli/options.js';
import type { SplitMeta } from '../score/outputs.js';

interface ScoreOptions {
  bank: string;
  dataset: string;
  split?: string;
  splitPart: string;
  k: string;
  alpha: string;
  ks: string;
  kSweep: string;
  out?: string;
  threads?: string;
  executionProvider: string;
  resamples: string;
  seed: string;
  hybrid?: string;
  bm25Language?: string;
  bm25Idf?: string;
  set: string[];
  transitions: string[];
  json?: boolean;
  quiet?: boolean;
}

/**
 * `bfe score`: every system of METHOD.md §6 on an encoded bank, evaluated on the same queries
 * and candidates, with paired comparisons to pooled and a k sweep; `--transitions from,to`
 * prints a pair's query-level transitions per subtask.
 */
export function scoreCommand(): Command {
  return new Command('score')
    .description(
      'rank each query’s candidates with pooled, maxsim, bm25, sparse-fusion, zero-floor, no-fusion and maxsim-fusion, and evaluate them',
    )
    .requiredOption('--bank <dir>', 'an encoded bank (bfe encode --out)')
    .requiredOption('--dataset <name>', 'the dataset the bank was encoded from, or lmeb:<folder>')
    .option('--split <file>', 'a split file (bfe data split --out); omitted: all queries')
    .option('--split-part <name>', 'train, validation or test', 'test')
    .option('--k <n>', 'bank tokens returned per query token', '64')
    .option('--alpha <a>', 'weight of the pooled branch in the fusion', '0.5')
    .option(
      '--ks <list>',
      'cut-offs of Recall@k and NDCG@k (must include 10; 4, 8, 10, 16 are the memory budgets)',
      '1,4,5,8,10,16,25,50',
    )
    .option('--k-sweep <list>', 'ks of the sparse-fusion sweep, or none', '16,32,64,128')
    .option('--out <dir>', 'write results.json, per-query.jsonl and k-sweep.json here')
    .option('--threads <n>', 'onnxruntime intra-op threads (default: one per physical core)')
    .option('--execution-provider <ep>', 'cpu, or webgpu (the GPU scorer)', 'cpu')
    .option('--resamples <n>', 'bootstrap resamples and sign flips', '10000')
    .option('--seed <n>', 'seed of the paired tests', '42')
    .option(
      '--hybrid <pooled,sparse,bm25>',
      'add the hybrid system (METHOD.md §8 extension) at these predeclared weights, scaled to sum 1',
    )
    .option(
      '--bm25-language <language>',
      'BM25 text: english (stop words, Porter2 stems) or none; default: english for an English dataset',
    )
    .option(
      '--bm25-idf <scope>',
      'BM25 IDF over the query’s candidates or the whole corpus',
      'candidates',
    )
    .option('--set <key=value>', 'dataset option, as given to bfe encode (repeatable)', collect, [])
    .option(
      '--transitions <from,to>',
      'print query-level transitions from → to: recoveries, reverse, both hit, both miss per subtask (repeatable, or a,b;c,d)',
      collect,
      [],
    )
    .option('--json', 'print results and the k sweep as JSON')
    .option('--quiet', 'no progress output')
    .action(async (opts: ScoreOptions) => {
      const { parseScoreCliOptions } = await import('../score/options.js');
      const o = parseScoreCliOptions({
        bank: opts.bank,
        dataset: opts.dataset,
        split: opts.split,
        splitPart: opts.splitPart,
        k: opts.k,
        alpha: opts.alpha,
        ks: opts.ks,
        kSweep: opts.kSweep,
        out: opts.out,
        threads: opts.threads,
        executionProvider: opts.executionProvider,
        resamples: opts.resamples,
        seed: opts.seed,
        hybrid: opts.hybrid,
        bm25Language: opts.bm25Language,
        bm25Idf: opts.bm25Idf,
        transitions: opts.transitions,
      });
      if (o.transitions.length > 0) {
        // A misspelt system fails before the scoring, not after it.
        const [{ KNOWN_SYSTEMS }, { checkTransitionPairs }] = await Promise.all([
          import('@bfe/eval'),
          import('../score/transitions.js'),
        ]);
        checkTransitionPairs(KNOWN_SYSTEMS, o.transitions);
      }
      const started = performance.now();
      const [datasets, encoder, pipeline] = await Promise.all([
        import('@bfe/datasets'),
        import('@bfe/encoder'),
        import('../score/pipeline.js'),
      ]);
      const { join } = await import('node:path');
      // Memory token vectors stay in their file, read by position as the scorer asks (bounded RSS).
      const bank = await encoder.openBank(o.bank, { memoryTokens: 'file' });
      const { benchmark, labels } = await datasets.loadDataset(o.dataset, {
        location: datasets.dataLocationFromEnv(),
        options: parseSetOptions(opts.set),
      });
      pipeline.checkBankMatches(bank, benchmark, o.bank);
      const bm25 = (await import('@bfe/scorer')).resolveBm25Options(
        { language: o.bm25Language, idf: o.bm25Idf },
        datasets.datasetLanguage(o.dataset),
      );

      let queryIds: Set<string> | undefined;
      let splitMeta: SplitMeta | undefined;
      if (o.split !== undefined) {
        const [{ verifySplit }, { readSplitFile }, { splitMetaOf }] = await Promise.all([
          import('@bfe/split'),
          import('../data/read-split.js'),
          import('../score/write.js'),
        ]);
        const split = await readSplitFile(o.split);
        verifySplit(split, benchmark);
        queryIds = new Set(split.queries[o.splitPart]);
        splitMeta = splitMetaOf(split, { file: o.split });
      }
      const splitName = o.split === undefined ? 'all' : o.splitPart;

      const { progressPrinter } = await import('../cli/progress.js');
      const progress = progressPrinter(opts.quiet === true);
      const { scoreAndWrite } = await import('../score/write.js');
      const { run, results, sweep, clusters } = await scoreAndWrite({
        out: o.out,
        bank,
        benchmark,
        labels,
        queryIds,
        k: o.k,
        alpha: o.alpha,
        ks: o.ks,
        kSweep: o.kSweep,
        bm25,
        ...(o.threads === undefined ? {} : { threads: o.threads }),
        executionProvider: o.executionProvider,
        onProgress: (done, total) => progress('score candidate groups', done, total),
        splitName,
        split: splitMeta,
        resamples: o.resamples,
        seed: o.seed,
        ...(o.hybrid === undefined
          ? {}
          : {
              hybrid: { weights: o.hybrid },
              extraMeta: {
                hybrid: {
                  extension:
                    'METHOD.md §8 lexical branch (bfe’s extension, not the paper’s method)',
                  weights: o.hybrid,
                  bm25Text: 'each memory’s whole text (never truncated)',
                },
              },
            }),
      });
      const model = bank.manifest.model;
      const seconds = (performance.now() - started) / 1000;
      const { renderKSweep } = await import('../score/k-sweep.js');
      const { renderTies, tiesMetaSchema } = await import('../score/ties.js');
      const { renderBudgetTable, renderScoreTable, subtaskComparisons, subtaskComparisonsJson } =
        await import('../score/table.js');
      const { requestedTransitions, renderTransitions } = await import('../score/transitions.js');
      const transitions = requestedTransitions(run.systems, o.transitions);
      const bySubtask = subtaskComparisons(run.systems, 'pooled', {
        resamples: o.resamples,
        seed: o.seed,
        clusters: clusters.of,
      });
      if (opts.json === true) {
        console.log(
          JSON.stringify(
            {
              out: o.out ?? null,
              results,
              subtaskComparisons: subtaskComparisonsJson(bySubtask),
              transitions,
              kSweep: sweep,
              stats: { ...run.stats, seconds },
            },
            null,
            2,
          ),
        );
        return;
      }
      const s = run.stats;
      console.log(
        [
          `dataset    ${benchmark.name}, split ${splitName}${o.split === undefined ? ' (all queries)' : ` of ${o.split}`}`,
          `bank       ${o.bank} (${model.name}, ${bank.manifest.dtype}, max length ${bank.manifest.maxLength})`,
          `scoring    k = ${o.k}, α = ${o.alpha}; ${s.queries} queries in ${s.groups} candidate groups` +
            `${s.clampedGroups > 0 ? `, ${s.clampedGroups} groups searched whole (fewer than k tokens)` : ''}` +
            `${s.pooledOnlyQueries > 0 ? `, ${s.pooledOnlyQueries} queries without content tokens (pooled only)` : ''}`,
          `time       ${seconds.toFixed(1)} s (scorer ${s.seconds.scoring.toFixed(1)} s, bm25 ${s.seconds.bm25.toFixed(1)} s of which index building ${s.seconds.bm25Index.toFixed(1)} s, ` +
            `${o.hybrid === undefined ? '' : `hybrid fusion ${s.seconds.hybrid.toFixed(2)} s, `}evaluation ${s.seconds.evaluation.toFixed(1)} s)`,
          '',
          renderScoreTable(results, bySubtask, 'pooled'),
          ...renderBudgetTable(results),
          ...renderTransitions(transitions),
          '',
          renderTies(tiesMetaSchema.parse(results.meta?.ties)),
          '',
          renderKSweep(sweep),
          ...(o.out === undefined
            ? []
            : ['', `written    ${join(o.out, 'results.json')}, per-query.jsonl, k-sweep.json`]),
        ].join('\n'),
      );
    });
}
