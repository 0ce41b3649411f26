import { Command } from 'commander';

/** `bfe data list`: the registered datasets. */
export function dataListCommand(): Command {
  return new Command('list')
    .description('list the registered datasets')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
      const { describeDatasets } = await import('@bfe/datasets');
      const rows = describeDatasets();
      if (opts.json === true) {
        console.log(JSON.stringify(rows, null, 2));
        return;
      }
      for (const r of rows) console.log(`${r.name.padEnd(20)} ${r.description} (${r.file})`);
      console.log(`${'lmeb:<folder>'.padEnd(20)} any task folder in LMEB's layout`);
    });
}
