import { Command } from 'commander';
import { collect, parseSetOptions } from '../cli/options.js';

/** `bfe data inspect <name>`: counts, categories, repairs and drops of a dataset. */
export function dataInspectCommand(): Command {
  return new Command('inspect')
    .description('load a dataset and print its counts and its load report')
    .argument('<name>', 'dataset name, or lmeb:<folder>')
    .option(
      '--set <key=value>',
      'dataset option (repeatable), e.g. categories=[1,2,3,4,5]',
      collect,
      [],
    )
    .option('--report <file>', 'where to save the full load report (default: beside the data)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { set: string[]; report?: string; json?: boolean }) => {
      const { dataLocationFromEnv, loadDataset, saveLoadReport, summarize } =
        await import('@bfe/datasets');
      const location = dataLocationFromEnv();
      const loaded = await loadDataset(name, { location, options: parseSetOptions(opts.set) });
      const summary = summarize(loaded);
      const reportPath = await saveLoadReport(loaded, opts.report ?? location);
      if (opts.json === true) {
        console.log(JSON.stringify({ ...summary, loadReport: reportPath }, null, 2));
        return;
      }
      const { renderSummary } = await import('../data/render.js');
      console.log(renderSummary(summary));
      console.log(`load report: ${reportPath}`);
    });
}
