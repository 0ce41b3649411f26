import { writeFile } from 'node:fs/promises';
import { Command } from 'commander';

interface CalibrateCliOptions {
  cacheDir?: string;
  out?: string;
  name: string;
  l2: string;
  json?: boolean;
  quiet?: boolean;
}

/**
 * `bfe calibrate <experiment>`: fits the store's relevance calibration (logistic regression on
 * the pooled cosine and the sparse evidence score) on a LongMemEval experiment's training
 * split, chooses `minScore` on validation, and reports how well it says "nothing relevant
 * here" on the test split's abstention questions (AUROC, precision/recall). `--out` writes the
 * calibration file the store ships (`packages/store/calibration/`).
 */
export function calibrateCommand(): Command {
  return new Command('calibrate')
    .description(
      'fit the relevance calibration on a LongMemEval split and measure abstention on its test part',
    )
    .argument('<experiment>', 'e.g. configs/experiments/longmemeval-s-relevance.yaml')
    .option('--cache-dir <dir>', 'the artifact cache (default: $BFE_CACHE_DIR or .bfe-cache)')
    .option('--out <file>', 'write the calibration file (JSON)')
    .option('--name <name>', "the calibration's name", 'all-minilm-l6-v2/longmemeval-s/v1')
    .option('--l2 <x>', 'L2 strength on the standardised weights', '0.001')
    .option('--json', 'print the calibration and the figures as JSON')
    .option('--quiet', 'no progress output')
    .action(async (file: string, opts: CalibrateCliOptions) => {
      const [{ readExperiment }, { runCalibrate, renderCalibration }, { progressPrinter }] =
        await Promise.all([
          import('../experiment/config.js'),
          import('../calibrate/run-calibrate.js'),
          import('../cli/progress.js'),
        ]);
      const { ConfigError } = await import('@bfe/core');
      const l2 = Number(opts.l2);
      if (!Number.isFinite(l2) || l2 < 0)
        throw new ConfigError(`--l2: not a number ≥ 0: ${opts.l2}`);
      const quiet = opts.quiet === true;
      const result = await runCalibrate({
        experiment: await readExperiment(file),
        configPath: file,
        cacheDir: opts.cacheDir,
        l2,
        name: opts.name,
        log: quiet ? () => {} : (line) => process.stderr.write(`${line}\n`),
        progress: progressPrinter(quiet),
      });
      if (opts.out !== undefined) {
        await writeFile(opts.out, `${JSON.stringify(result.calibration, null, 2)}\n`);
      }
      console.log(opts.json === true ? JSON.stringify(result, null, 2) : renderCalibration(result));
    });
}
