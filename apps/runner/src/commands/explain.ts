import { Command } from 'commander';
import { collect, parseSetOptions } from '../cli/options.js';

interface ExplainOptions {
  bank: string;
  dataset: string;
  split?: string;
  splitPart: string;
  system: string;
  k: string;
  alpha: string;
  adapter?: string;
  threads?: string;
  query?: string;
  memory?: string;
  removeTop: string;
  removeToken: string[];
  aggregate?: boolean;
  top: string;
  out?: string;
  set: string[];
  json?: boolean;
  markdown?: boolean;
  quiet?: boolean;
}

/**
 * `bfe explain`: the paper's token interventions (Appendix D). `--query`: one query's token
 * evidence for one memory and its fused rank after removing the top 1…n excess contributions
 * and named tokens; `--aggregate`: the same for every evaluated query's highest-ranked
 * relevant memory, summarised per subtask.
 */
export function explainCommand(): Command {
  return new Command('explain')
    .description(
      'token interventions: remove query tokens’ excess-over-floor contributions and report the memory’s fused rank',
    )
    .requiredOption('--bank <dir>', 'an encoded bank (bfe encode --out)')
    .requiredOption('--dataset <name>', 'the dataset the bank was encoded from, or lmeb:<folder>')
    .option('--set <key=value>', 'dataset option, as given to bfe encode (repeatable)', collect, [])
    .option('--split <file>', 'a split file (bfe data split --out); omitted: all queries')
    .option('--split-part <name>', 'train, validation or test', 'test')
    .option(
      '--system <name>',
      'sparse-fusion, no-fusion, zero-floor, adapted or adapted-zero-floor',
      'sparse-fusion',
    )
    .option('--k <n>', 'bank tokens returned per query token', '64')
    .option(
      '--alpha <a>',
      'weight of the pooled branch (the adapted systems use their selected α)',
      '0.5',
    )
    .option('--adapter <dir>', 'an adapt artifact (its selected adapters), for the adapted systems')
    .option('--threads <n>', 'onnxruntime intra-op threads (default: one per physical core)')
    .option('--query <id>', 'explain this query')
    .option(
      '--memory <id>',
      'the memory to analyse (default: the highest-ranked relevant one; without labels the top one)',
    )
    .option(
      '--remove-top <n>',
      'report the rank after removing the top 1…n contributions (≤ 6)',
      '6',
    )
    .option(
      '--remove-token <text>',
      'also remove this query token (its text, or #i for the i-th content token; repeatable)',
      collect,
      [],
    )
    .option('--aggregate', 'every evaluated query: the per-subtask table')
    .option('--top <list>', 'with --aggregate: the top-n removals', '1,2,4')
    .option('--out <file>', 'write the result (with per-query records) as JSON')
    .option('--json', 'print the result as JSON')
    .option('--markdown', 'with --aggregate: print the table as Markdown')
    .option('--quiet', 'no progress output')
    .action(async (opts: ExplainOptions) => {
      const { parseExplainCliOptions } = await import('../explain/options.js');
      const o = parseExplainCliOptions({
        bank: opts.bank,
        dataset: opts.dataset,
        split: opts.split,
        splitPart: opts.splitPart,
        system: opts.system,
        k: opts.k,
        alpha: opts.alpha,
        adapter: opts.adapter,
        threads: opts.threads,
        query: opts.query,
        memory: opts.memory,
        removeTop: opts.removeTop,
        removeToken: opts.removeToken,
        aggregate: opts.aggregate === true,
        top: opts.top,
        out: opts.out,
      });
      const [datasets, encoder, models, pipeline, explain, render] = await Promise.all([
        import('@bfe/datasets'),
        import('@bfe/encoder'),
        import('@bfe/models'),
        import('../score/pipeline.js'),
        import('../explain/pipeline.js'),
        import('../explain/render.js'),
      ]);
      const bank = await encoder.openBank(o.bank, { memoryTokens: 'file' });
      const { benchmark, labels } = await datasets.loadDataset(o.dataset, {
        location: datasets.dataLocationFromEnv(),
        options: parseSetOptions(opts.set),
      });
      pipeline.checkBankMatches(bank, benchmark, o.bank);
      let queryIds: Set<string> | undefined;
      if (o.split !== undefined) {
        const [{ verifySplit }, { readSplitFile }] = await Promise.all([
          import('@bfe/split'),
          import('../data/read-split.js'),
        ]);
        const split = await readSplitFile(o.split);
        verifySplit(split, benchmark);
        queryIds = new Set(split.queries[o.splitPart]);
      }
      let adapted: { queryTokens: Float32Array; alpha: number } | undefined;
      if (o.adapter !== undefined) {
        const { loadSelectedAdapter } = await import('../experiment/stages/adapt-record.js');
        const s = await loadSelectedAdapter(o.adapter, bank);
        adapted = o.system === 'adapted' ? s : s.zeroFloor;
      }
      const input = {
        bank,
        benchmark,
        labels,
        queryIds,
        system: o.system,
        k: o.k,
        alpha: o.alpha,
        ...(adapted === undefined ? {} : { adapted }),
        ...(o.threads === undefined ? {} : { threads: o.threads }),
      };
      const header = {
        dataset: benchmark.name,
        split: o.split === undefined ? 'all queries' : `${o.splitPart} of ${o.split}`,
        system: o.system,
        k: o.k,
        alpha: adapted?.alpha ?? (o.system === 'no-fusion' ? 0 : o.alpha),
      };
      const write = async (value: unknown): Promise<void> => {
        if (o.out === undefined) return;
        const { writeFileAtomic } = await import('@bfe/core');
        await writeFileAtomic(o.out, `${JSON.stringify(value, null, 2)}\n`);
      };
      if (o.aggregate) {
        const { progressPrinter } = await import('../cli/progress.js');
        const progress = progressPrinter(opts.quiet === true || opts.json === true);
        const result = await explain.aggregateInterventions(input, o.top, (done, total) =>
          progress('score candidate groups', done, total),
        );
        const json = { ...header, analysed: result.records.length, ...result };
        await write(json);
        if (opts.json === true) console.log(JSON.stringify(json, null, 2));
        else
          console.log(
            render.renderAggregate(result, header, opts.markdown === true ? 'markdown' : 'plain'),
          );
        return;
      }
      const modelDir = models.resolveModelDir(bank.manifest.model.name);
      const manifest = await models.loadModelManifest(modelDir);
      const { join } = await import('node:path');
      const tokenizer = new encoder.TextTokenizer(
        join(modelDir, manifest.tokenizerFile),
        undefined,
      );
      const tokenText = (id: number): string | undefined => tokenizer.tokenText(id);
      const e = await explain.explainQuery(input, {
        queryId: o.query!,
        ...(o.memory === undefined ? {} : { memoryId: o.memory }),
        removeTop: o.removeTop,
        removeTokens: o.removeToken,
        tokenText,
      });
      const json = explain.explanationJson(e, header, tokenText);
      await write(json);
      if (opts.json === true) console.log(JSON.stringify(json, null, 2));
      else console.log(render.renderQueryExplanation(e, header, tokenText));
    });
}
