/**
 * The flags of `pnpm bench:big-bank`: one command, several modes. Without a mode flag it writes a
 * synthetic bank larger than RAM and searches it (`big-bank.ts`); `--hnsw-build` /
 * `--peer-sweep` / `--filtering` run the HNSW scale bench on a tiled bank (`scale-cli.ts`),
 * `--milvus` Milvus Lite beside it (`milvus-bench.ts`), `--segmented-build` /
 * `--segmented-search` the segmented graphs (`segmented-cli.ts`).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MILVUS_INDEX_TYPES, type MilvusIndexType } from '@bfe/index-milvus';
import {
  benchCommand,
  flag,
  intList,
  list,
  nonNegative,
  nonNegativeNumber,
  oneOf,
  Option,
  parseCommand,
  positive,
  someOf,
} from '../shared/cli.js';

export interface BigBankOptions {
  // The bank larger than RAM.
  tokens: number;
  dim: number;
  queryTokens: number;
  k: number;
  sample: number;
  dir: string;
  seed: number;
  keep?: boolean;
  json?: boolean;
  /** A child process's one phase (set by the parent, not by hand). */
  phase?: string;
  // The HNSW scale bench on a tiled bank (scale.ts).
  hnswBuild?: boolean;
  peerSweep?: boolean;
  filtering?: boolean;
  shapes: string[];
  filterQueries: number;
  filterTokens?: number;
  nprobe: number[];
  python: string;
  index: string;
  bank?: string;
  checkpoints: number[];
  M: number;
  efConstruction: number;
  efSearch: number[];
  threads: number;
  graphs?: string;
  overFetch: number[];
  queries: number;
  rows: number;
  noise: number;
  // Milvus Lite beside exact and HNSW on the same tiled bank (milvus-bench.ts).
  milvus?: boolean;
  milvusIndex: MilvusIndexType[];
  milvusOn: ('lite' | 'server')[];
  milvusNlist: number;
  milvusNprobe: number;
  milvusData: string;
  milvusReindex?: boolean;
  milvusWarmup?: number;
  // Segmented i8 graphs (segmented.ts).
  segmentedBuild?: boolean;
  segmentedSearch?: boolean;
  segmentTokens: number;
  segments?: number;
  codec: 'sq8' | 'sq4';
  codesInRam?: boolean;
  real?: boolean;
  keepVectors?: boolean;
  rowsPerQuery?: number;
  // The clustered residual backend beside exact (ivf-bench.ts).
  ivf?: boolean;
  centroids: number[];
  residualBits: number[];
  ivfSample?: number;
  ivfIterations: number;
  /** ivf: faiss's IVF indexes beside it (python/ivf_peers.py, `--python`), files under `--dir`. */
  ivfPeers?: boolean;
  /** ivf: scan threads of one search, each measured, interleaved query by query. */
  ivfThreads: number[];
  /** ivf: the centroid product's arithmetic, each measured beside the others. */
  ivfCentroidProduct: ('fp32' | 'int8')[];
  ivfPeerEf: number[];
  /** ivf: passes over the queries (latency over all, recall from the first). */
  ivfReps: number;
  /** ivf: adaptive probing's slacks, each measured beside nprobe alone ('none'). */
  ivfProbeSlack: (number | 'none')[];
  /** ivf: with a slack, clusters one row probes at most. */
  ivfMaxProbe: number;
  /** The clustered index grown by appends, then deleted from and compacted (ivf-grow.ts). */
  ivfGrow?: boolean;
  ivfLarge?: boolean;
  /** ivf-large: the `<centroids>-<bits>` a child phase builds or searches (set by the parent). */
  ivfSetting?: string;
  /** ivf-grow: memories a batch of appends. */
  growBatch: number;
}

/** `--bank`, where a mode reads an encoded bank. */
export function bankDir(o: BigBankOptions): string {
  if (o.bank === undefined) throw new Error('--bank <dir> is required');
  return o.bank;
}

const command = benchCommand(
  'bench:big-bank',
  'banks larger than RAM: exact and SQ4 search, HNSW at scale, Milvus Lite, segmented graphs',
)
  .option('--hnsw-build', 'build the tiled bank and its graphs at --checkpoints under --index')
  .option('--peer-sweep', 'bfe against faiss at matched recall on the first --tokens tokens')
  .option('--filtering', 'per-bank graphs against one filtered graph (--shapes)')
  .option('--milvus', 'Milvus Lite beside exact and HNSW on the tiled bank')
  .option('--segmented-build', 'segmented i8 graphs over sq8 / sq4 codes under --index')
  .option('--segmented-search', 'search the segmented graphs of --index')
  .option('--ivf', 'the clustered residual backend beside exact on real --bank tokens')
  .option('--ivf-grow', 'the clustered index built on half the tokens, grown by appends, compacted')
  .option(
    '--ivf-large',
    'the clustered backend on a tiled bank never held whole (up to 2e7 tokens)',
  )
  .addOption(new Option('--ivf-setting <c-bits>').hideHelp())
  .addOption(flag('--grow-batch <n>', 'ivf-grow: memories a batch of appends', positive, '1000'))
  .addOption(flag('--centroids <list>', 'ivf: k-means centroids', intList, '4096'))
  .addOption(
    flag(
      '--residual-bits <list>',
      'ivf: residual bits (2, 4)',
      (t) =>
        list(t)
          .map(oneOf(['2', '4']))
          .map(Number),
      '2,4',
    ),
  )
  .addOption(flag('--ivf-sample <n>', 'ivf: k-means sample (default 64 per centroid)', positive))
  .addOption(flag('--ivf-iterations <n>', 'ivf: k-means iterations', positive, '10'))
  .option(
    '--ivf-peers',
    'ivf: faiss IVF-SQ4, IVF-PQ fast scan and HNSWFlat beside it (--python, --dir)',
  )
  .addOption(
    flag(
      '--ivf-peer-ef <list>',
      'ivf peers: faiss HNSWFlat efSearch values',
      intList,
      '64,128,256',
    ),
  )
  .addOption(
    flag(
      '--ivf-threads <list>',
      'ivf: scan threads of one search (each measured, interleaved; ratios to the first)',
      intList,
      '1',
    ),
  )
  .addOption(
    flag(
      '--ivf-centroid-product <list>',
      'ivf: the centroid product in fp32 or int8 (each measured, interleaved)',
      someOf(['fp32', 'int8'] as const),
      'fp32',
    ),
  )
  .addOption(
    flag(
      '--ivf-probe-slack <list>',
      'ivf: adaptive probing: past nprobe, on while a centroid is within this of the row\'s floor ("none": off)',
      (v: string) => list(v).map((x) => (x === 'none' ? ('none' as const) : nonNegativeNumber(x))),
      'none',
    ),
  )
  .addOption(
    flag(
      '--ivf-max-probe <n>',
      'ivf: with a slack, clusters one row probes at most',
      positive,
      '64',
    ),
  )
  .addOption(
    flag(
      '--ivf-reps <n>',
      'ivf: passes over the queries (p50 over all, recall from the first)',
      positive,
      '1',
    ),
  )
  .addOption(
    flag('--tokens <n>', 'bank tokens (peer sweep, ivf: the first n)', positive, '20000000'),
  )
  .addOption(flag('--dim <n>', 'synthetic bank dimension', positive, '384'))
  .addOption(flag('--query-tokens <n>', 'tokens of the one query', positive, '32'))
  .addOption(flag('--k <n>', 'top-k', positive, '64'))
  .addOption(flag('--sample <n>', 'tokens the codec is trained on', positive, '100000'))
  .option('--dir <dir>', 'where the synthetic bank is written', join(tmpdir(), 'bfe-big-bank'))
  .addOption(flag('--seed <n>', 'synthetic bank seed', nonNegative, '7'))
  .option('--keep', 'keep the synthetic bank file')
  .option('--json', 'print only the JSON line')
  .addOption(new Option('--phase <name>').hideHelp())
  .option(
    '--index <dir>',
    'the tiled bank (written by --hnsw-build) or the segmented build',
    '/work/scratch/scale/tiled',
  )
  .option('--bank <dirs>', 'encoded bank folder(s), comma-separated with --real')
  .addOption(flag('--checkpoints <list>', 'tiled bank sizes', intList, '100000,1000000,2000000'))
  .addOption(flag('--M <n>', 'HNSW M', positive, '16'))
  .addOption(flag('--ef-construction <n>', 'HNSW efConstruction', positive, '64'))
  .addOption(flag('--ef-search <list>', 'HNSW efSearch values', intList, '32,64,128'))
  .addOption(flag('--threads <n>', 'build and search threads', nonNegative, '2'))
  .option('--graphs <dir>', 'where sweep graphs and ivf indexes are kept')
  .addOption(flag('--over-fetch <list>', 'proposals per wanted hit, rescored', intList, '1'))
  .addOption(flag('--queries <n>', 'queries of the build', positive, '20'))
  .addOption(flag('--rows <n>', 'query rows (tokens) per query', positive, '24'))
  .addOption(flag('--noise <x>', 'noise of the tiled copies', nonNegativeNumber, '0.35'))
  .addOption(flag('--shapes <list>', 'filtering shapes', list, 'locomo,longmemeval,1000-banks'))
  .addOption(flag('--filter-queries <n>', 'filtering: queries per tiled shape', positive, '10'))
  .addOption(
    flag('--filter-tokens <n>', 'filtering: the saved checkpoint (default: the largest)', positive),
  )
  .addOption(
    flag(
      '--nprobe <list>',
      'peer sweep (IVF-PQ) and --ivf: nprobe values',
      intList,
      '4,8,16,32,64',
    ),
  )
  .addOption(
    new Option('--python <path>', 'python with faiss-cpu')
      .env('BFE_PYTHON')
      .default('/tmp/bfe-bench-venv/bin/python'),
  )
  .addOption(
    flag(
      '--milvus-index <list>',
      'Milvus index types',
      (text) => list(text).map(oneOf([...MILVUS_INDEX_TYPES])),
      'FLAT,HNSW',
    ),
  )
  .addOption(
    flag(
      '--milvus-on <list>',
      'Milvus Lite and/or the Milvus 2.3.5 standalone server',
      (text) => list(text).map(oneOf(['lite', 'server'])),
      'lite',
    ),
  )
  .addOption(flag('--milvus-nlist <n>', 'IVF lists', positive, '1024'))
  .addOption(flag('--milvus-nprobe <n>', 'IVF lists probed', positive, '32'))
  .option('--milvus-data <dir>', "Milvus Lite's data", join(tmpdir(), 'bfe-milvus-bench'))
  .option('--milvus-reindex', 'one insert; each later index type replaces the index')
  .addOption(flag('--milvus-warmup <n>', 'warm-up queries (default: all)', nonNegative))
  .addOption(flag('--segment-tokens <n>', 'tokens per segment', positive, '1000000'))
  .addOption(
    flag('--segments <n>', 'segments to build (default 20) or search (default all)', positive),
  )
  .addOption(flag('--codec <name>', 'sq8 or sq4', oneOf(['sq8', 'sq4']), 'sq8'))
  .option('--codes-in-ram', 'segmented search: codes read into memory')
  .option('--real', "segmented build: the banks' own states, no noise")
  .option('--keep-vectors', 'segmented build: keep vectors.f32 for a peer')
  .addOption(flag('--rows-per-query <n>', 'segmented search: query rows per query', positive));

/** Parses this process's arguments. */
export function parseBigBank(): BigBankOptions {
  const { options } = parseCommand<BigBankOptions>(command);
  return options;
}
