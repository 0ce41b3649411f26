import { Command } from 'commander';

/** `bfe data fetch <name>`: verified local copy of a dataset's official file(s). */
export function dataFetchCommand(): Command {
  return new Command('fetch')
    .description('copy a dataset from $BFE_DATA_MIRROR or download it, verifying its SHA-256')
    .argument('<name>', 'dataset name (see `bfe data list`)')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }) => {
      const { dataLocationFromEnv, fetchDataset } = await import('@bfe/datasets');
      const results = await fetchDataset(name, dataLocationFromEnv());
      if (opts.json === true) {
        console.log(JSON.stringify({ dataset: name, files: results }, null, 2));
        return;
      }
      for (const r of results) {
        console.log(
          `${r.source.name}: ${r.from} ${r.origin} → ${r.path} (sha256 ${r.source.sha256.slice(0, 12)}… verified)`,
        );
      }
    });
}
