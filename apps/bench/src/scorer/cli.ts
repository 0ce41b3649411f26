/** The flags of `pnpm bench:scorer`. */
import { resolve } from 'node:path';
import {
  benchCommand,
  flag,
  intList,
  nonNegativeNumber,
  parseCommand,
  positive,
  someOf,
} from '../shared/cli.js';
import { repoRoot } from '../shared/paths.js';

export interface Cli {
  readonly sizes: readonly number[];
  readonly rows: readonly number[];
  readonly k: number;
  readonly dim: number;
  readonly chunkSize: number;
  readonly pool: number;
  readonly threads: number;
  readonly repeat: number;
  readonly minSeconds: number;
  readonly latencyRuns: number;
  readonly peers: readonly string[];
  readonly waitIdle: number;
  readonly timeout: number;
  readonly json: boolean;
  readonly python: string;
}

type Options = Omit<Cli, 'json' | 'python'> & { json?: boolean };

export function parseCli(): Cli {
  const command = benchCommand(
    'bench:scorer',
    'exact bank-wide top-k: bfe against numpy and faiss on the same synthetic vectors',
  )
    .addOption(flag('--sizes <list>', 'bank tokens', intList, '10000,100000,1000000,10000000'))
    .addOption(
      flag(
        '--rows <list>',
        'query rows per search: 20 = one query, 256 = a batch',
        intList,
        '20,256',
      ),
    )
    .addOption(flag('--k <n>', 'top-k', positive, '64'))
    .addOption(flag('--dim <n>', 'vector dimension', positive, '384'))
    .addOption(
      flag('--chunk-size <n>', 'bank tokens per kernel call, for bfe and numpy', positive, '65536'),
    )
    .addOption(
      flag(
        '--pool <n>',
        'distinct generated tokens; larger banks are streamed',
        positive,
        String(2 ** 20),
      ),
    )
    .addOption(flag('--threads <n>', 'threads for onnxruntime, BLAS and faiss', positive, '2'))
    .addOption(
      flag(
        '--repeat <n>',
        'timed runs at least, per measurement (the table shows the median)',
        positive,
        '3',
      ),
    )
    .addOption(
      flag(
        '--min-seconds <s>',
        'keep repeating (up to 50 runs) until s seconds have passed',
        nonNegativeNumber,
        '2',
      ),
    )
    .addOption(flag('--latency-runs <n>', 'one-query latency runs per case', positive, '200'))
    .addOption(
      flag('--peers <list>', 'python = numpy and faiss', someOf(['bfe', 'python']), 'bfe,python'),
    )
    .addOption(
      flag(
        '--wait-idle <s>',
        'before each process, wait up to s seconds for the CPUs to be idle',
        nonNegativeNumber,
        '60',
      ),
    )
    .addOption(flag('--timeout <s>', 'per process', positive, '1800'))
    .option('--json', 'print only the JSON line')
    .addHelpText(
      'after',
      '\nEnvironment: BFE_SCORER_PYTHON (default ../venv-scorer/bin/python: numpy + faiss-cpu).',
    );
  const { options } = parseCommand<Options>(command);
  if (options.pool % options.chunkSize !== 0)
    command.error(
      `error: --pool ${options.pool} must be a multiple of --chunk-size ${options.chunkSize}`,
    );
  return {
    ...options,
    json: options.json === true,
    python: process.env.BFE_SCORER_PYTHON ?? resolve(repoRoot, '../venv-scorer/bin/python'),
  };
}
