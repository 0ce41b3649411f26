/**
 * The `scale` part's flags of `pnpm bench:store` and its table (see scale-bench.ts). It shares
 * `--memories` (the store's memories), `--queries` (latency queries), `--work` and
 * `--markdown` with the other parts.
 *
 * @example
 * BFE_DATA_MIRROR=../shared/data pnpm bench:store --parts scale --memories 20000 --banks 20
 * pnpm bench:store --parts scale --memories 1000000 --codec sq4 --markdown
 */
import type { Command } from 'commander';
import {
  flag,
  nonNegative,
  nonNegativeNumber,
  oneOf,
  positive,
  someOf,
  type Parse,
} from '../shared/cli.js';
import { note, out, printTable } from '../shared/table.js';
import { CODECS, SCALE_HEAD, SCALE_STEPS, scaleRows, type ScaleOptions } from './scale-bench.js';

/** The flags {@link scaleFlags} adds, as parsed. */
export interface ScaleCliOptions {
  banks: number;
  codec: ScaleOptions['codec'];
  cacheBytes: number;
  graphBytes?: number;
  latencyBank: number;
  scaleSearches: number;
  lmeShare: number;
  lmeMemories: number;
  crashMemories: number;
  scaleBatch: number;
  seed: number;
  rssLimitGb: number;
  maxBuildSeconds: number;
  scaleSteps: ScaleOptions['steps'];
  store?: string;
  keep?: boolean;
}

const share: Parse<number> = (text) => Math.min(1, nonNegativeNumber(text));

/** Adds the `scale` part's flags to the store benchmark's command. */
export function scaleFlags(command: Command): Command {
  return command
    .addOption(flag('--banks <n>', 'scale: banks', positive, '1000'))
    .addOption(flag('--codec <name>', 'scale: the store codec', oneOf(CODECS), 'sq4'))
    .addOption(
      flag('--cache-bytes <n>', "scale: the store's cacheBytes", nonNegative, '1073741824'),
    )
    .addOption(
      flag(
        '--graph-bytes <n>',
        "scale: serving's maxGraphBytes (default the store's)",
        nonNegative,
      ),
    )
    .addOption(flag('--latency-bank <n>', 'scale: memories of bank 0', positive, '10000'))
    .addOption(flag('--scale-searches <n>', 'scale: searches of random banks', positive, '200'))
    .addOption(flag('--lme-share <x>', 'scale: share of LongMemEval-S memories', share, '0.2'))
    .addOption(
      flag('--lme-memories <n>', 'scale: LongMemEval-S memories read', nonNegative, '4000'),
    )
    .addOption(
      flag('--crash-memories <n>', 'scale: adds acknowledged before kill -9', positive, '2000'),
    )
    .addOption(flag('--scale-batch <n>', 'scale: memories per add call', positive, '256'))
    .addOption(flag('--seed <n>', 'scale: seed of the draws', nonNegative, '1'))
    .addOption(
      flag('--rss-limit-gb <x>', 'scale: RSS that stops a process', nonNegativeNumber, '12'),
    )
    .addOption(
      flag('--max-build-seconds <s>', 'scale: stop adding after (0: never)', nonNegative, '0'),
    )
    .addOption(
      flag(
        '--scale-steps <list>',
        'scale: steps to run, of build,serve,latency,crash',
        someOf(SCALE_STEPS),
        SCALE_STEPS.join(','),
      ),
    )
    .option(
      '--store <dir>',
      'scale: the store folder (kept); without the build step, a store built before',
    )
    .option('--keep', 'scale: keep the store folder');
}

/** Runs the part and prints its caption and table. */
export async function scalePart(
  options: ScaleCliOptions & {
    memories: number;
    queries: number;
    work?: string;
    markdown?: boolean;
  },
): Promise<void> {
  const { caption, rows } = await scaleRows({
    memories: options.memories,
    banks: options.banks,
    codec: options.codec,
    cacheBytes: options.cacheBytes,
    ...(options.graphBytes === undefined ? {} : { graphBytes: options.graphBytes }),
    latencyBank: options.latencyBank,
    searches: options.scaleSearches,
    queries: options.queries,
    lmeShare: options.lmeShare,
    lmeMemories: options.lmeMemories,
    crashMemories: options.crashMemories,
    batch: options.scaleBatch,
    seed: options.seed,
    rssLimitGb: options.rssLimitGb,
    maxBuildSeconds: options.maxBuildSeconds,
    steps: options.scaleSteps,
    ...(options.store === undefined ? {} : { store: options.store }),
    ...(options.work === undefined ? {} : { work: options.work }),
    ...(options.keep === undefined ? {} : { keep: options.keep }),
  });
  note('');
  for (const line of caption) out(line);
  out('');
  printTable({ head: SCALE_HEAD, rows }, { markdown: options.markdown });
  out('');
}
