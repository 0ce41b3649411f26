import { Command } from 'commander';
import type { Experiment } from '../experiment/config.js';

interface RunOptions {
  cacheDir?: string;
  runsDir?: string;
  json?: boolean;
  quiet?: boolean;
  shard?: string;
}

/**
 * `bfe run <experiment>`: one experiment file (YAML or JSON) end to end through the cached
 * stages; prints the result table (or, with `--json`, one JSON object with `runDir` and
 * `stages`).
 */
export function runCommand(): Command {
  return new Command('run')
    .description(
      'run an experiment file: dataset → encode → split → adapt → score → report, each stage cached by content hash',
    )
    .argument(
      '<experiment>',
      'an experiment file (.yaml, .yml or .json), e.g. configs/experiments/locomo-minilm.yaml',
    )
    .option('--cache-dir <dir>', 'the artifact cache (default: $BFE_CACHE_DIR or .bfe-cache)')
    .option('--runs-dir <dir>', 'where run folders go', 'runs')
    .option(
      '--json',
      'print one JSON object: runDir, stages, seed means (mean, std, perSeed) and per-seed headlines',
    )
    .option('--quiet', 'no progress output')
    .option(
      '--shard <i/n>',
      "compute only the i-th of n slices of the memories' encoding and store it (with a team cache: upload it); a later run without --shard assembles the slices",
    )
    .action(async (file: string, opts: RunOptions) => {
      const [{ readExperiment }, { runExperiment }, { progressPrinter }] = await Promise.all([
        import('../experiment/config.js'),
        import('../experiment/run-experiment.js'),
        import('../cli/progress.js'),
      ]);
      const experiment = await readExperiment(file);
      const quiet = opts.quiet === true;
      if (opts.shard !== undefined) {
        await runShard(file, experiment, opts, quiet);
        return;
      }
      const outcome = await runExperiment({
        experiment,
        configPath: file,
        argv: process.argv.slice(2),
        cacheDir: opts.cacheDir,
        runsDir: opts.runsDir,
        log: quiet ? () => {} : (line) => process.stderr.write(`${line}\n`),
        progress: progressPrinter(quiet),
      });
      if (opts.json === true) {
        console.log(
          JSON.stringify(
            {
              runDir: outcome.runDir,
              runId: outcome.runId,
              seconds: outcome.seconds,
              stages: outcome.stages,
              selectionData: outcome.summary.selectionData,
              load: outcome.summary.load,
              identicalAcrossSeeds: outcome.summary.identicalAcrossSeeds,
              // The mean over training seeds (std: sample, null with one seed), every system.
              means: outcome.summary.systems.map((s) => ({
                name: s.name,
                identicalAcrossSeeds: s.identicalAcrossSeeds,
                'recall@10': s.metrics['recall@10'],
                'ndcg@10': s.metrics['ndcg@10'],
              })),
              headline: outcome.perSeed.map((p) => ({
                seed: p.seed,
                systems: p.results.systems.map((s) => ({
                  name: s.name,
                  'recall@10': s.metrics['recall@10'],
                  'ndcg@10': s.metrics['ndcg@10'],
                  nQueries: s.nQueries,
                })),
              })),
            },
            null,
            2,
          ),
        );
        return;
      }
      console.log(outcome.terminal);
      const hits = outcome.stages.filter((s) => s.cached).length;
      const remote = outcome.stages.filter((s) => s.source === 'remote').length;
      console.log(
        `\nrun        ${outcome.runDir}\nstages     ${outcome.stages.length} (${hits} cached${remote > 0 ? `, ${remote} from the remote cache` : ''}): ${outcome.stages.map((s) => `${s.name}${s.cached ? ' ✓' : ` ${s.seconds.toFixed(1)} s`}`).join(', ')}\ntime       ${outcome.seconds.toFixed(1)} s`,
      );
    });
}

/** `bfe run <experiment> --shard i/n`: one slice of the encode, then a one-line summary. */
async function runShard(
  file: string,
  experiment: Experiment,
  opts: RunOptions,
  quiet: boolean,
): Promise<void> {
  const [{ parseShardOption }, { runExperimentShard }, { progressPrinter }] = await Promise.all([
    import('../cli/options.js'),
    import('../experiment/run-shard.js'),
    import('../cli/progress.js'),
  ]);
  const shard = parseShardOption(opts.shard ?? '');
  const outcome = await runExperimentShard({
    experiment,
    configPath: file,
    shard,
    cacheDir: opts.cacheDir,
    log: quiet ? () => {} : (line) => process.stderr.write(`${line}\n`),
    progress: progressPrinter(quiet),
  });
  if (opts.json === true) {
    console.log(JSON.stringify(outcome, null, 2));
    return;
  }
  const { artifact } = outcome;
  console.log(
    `shard ${shard.index}/${shard.count}: ${artifact.source} ${artifact.key.slice(0, 12)} (${artifact.dir}); a run without --shard assembles ${outcome.plannedShards} shards`,
  );
}
