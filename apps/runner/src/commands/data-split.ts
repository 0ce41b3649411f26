import { Command } from 'commander';
import { collect, parseSetOptions } from '../cli/options.js';

/** `bfe data split <name>`: a seeded train/validation/test split under a policy. */
export function dataSplitCommand(): Command {
  return new Command('split')
    .description('split a dataset into train/validation/test (METHOD.md §5)')
    .argument('<name>', 'dataset name, or lmeb:<folder>')
    .option(
      '--policy <policy>',
      'connected-bank (strict) or query-disjoint-shared-bank',
      'connected-bank',
    )
    .option('--seed <n>', 'seed', '42')
    .option(
      '--ratios <a,b,c>',
      'train,validation,test as fractions, percentages or unit counts (default 60,20,20)',
    )
    .option(
      '--folds <k>',
      'cross-fitting: cut the units into k folds, each tested once, validated on the previous fold',
    )
    .option('--fold <f>', 'with --folds: the fold whose split --out writes (default 0)')
    .option('--set <key=value>', 'dataset option (repeatable)', collect, [])
    .option('--out <file>', 'write the split file here')
    .option('--json', 'print JSON')
    .action(
      async (
        name: string,
        opts: {
          policy: string;
          seed: string;
          ratios?: string;
          folds?: string;
          fold?: string;
          set: string[];
          out?: string;
          json?: boolean;
        },
      ) => {
        const [{ dataLocationFromEnv, loadDataset }, split, { parseSplitOptions }] =
          await Promise.all([
            import('@bfe/datasets'),
            import('@bfe/split'),
            import('../data/split-options.js'),
          ]);
        const options = parseSplitOptions(opts);
        const { benchmark } = await loadDataset(name, {
          location: dataLocationFromEnv(),
          options: parseSetOptions(opts.set),
        });
        const structure = split.componentStructure(benchmark);
        if (options.folds !== undefined) {
          const { renderFolds } = await import('../data/render-folds.js');
          const folds = split.makeFoldSplits(benchmark, {
            folds: options.folds,
            seed: options.seed,
            policy: options.policy,
          });
          const chosen = folds[options.fold ?? 0];
          if (chosen === undefined) {
            const { ConfigError } = await import('@bfe/core');
            throw new ConfigError(`--fold ${options.fold} is not one of 0…${folds.length - 1}.`);
          }
          if (opts.out !== undefined) {
            const { writeFileAtomic } = await import('@bfe/core');
            await writeFileAtomic(opts.out, `${JSON.stringify(chosen, null, 2)}\n`);
          }
          if (opts.json === true) {
            console.log(JSON.stringify({ structure, folds, file: opts.out ?? null }, null, 2));
            return;
          }
          console.log(renderFolds(folds));
          if (opts.out !== undefined)
            console.log(`split file (fold ${chosen.crossFit?.fold}): ${opts.out}`);
          return;
        }
        const result = split.makeSplit(benchmark, options);
        if (opts.out !== undefined) {
          const { writeFileAtomic } = await import('@bfe/core');
          await writeFileAtomic(opts.out, `${JSON.stringify(result, null, 2)}\n`);
        }
        if (opts.json === true) {
          console.log(
            JSON.stringify({ structure, split: result, file: opts.out ?? null }, null, 2),
          );
          return;
        }
        const { renderSplit } = await import('../data/render.js');
        console.log(renderSplit(result, structure));
        if (opts.out !== undefined) console.log(`split file: ${opts.out}`);
      },
    );
}
