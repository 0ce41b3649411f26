// The index stage's `ivf` backend: the clustered residual index built beside the codec's codes
// (`ivf.bin`) and opened over them.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  IvfTokenIndex,
  OrtSimilarityKernel,
  type CodeSource,
  type CodecModel,
  type SimilarityKernel,
} from '@bfe/index';
import type { Experiment } from '../config.js';

/** The experiment's `index` section, defaults filled. */
type IndexConfig = NonNullable<Experiment['index']>;

export const IVF_FILE = 'ivf.bin';
/** nprobe and residual bits of a section that leaves them out. */
export const IVF_DEFAULT_NPROBE = 16;
export const IVF_DEFAULT_BITS = 4;

/** The centroids of the section, else WARP's rule `2^⌊log2(16·√tokens)⌋`, at most the tokens. */
export function ivfCentroids(c: IndexConfig, tokens: number): number {
  if (c.centroids !== undefined) return Math.min(c.centroids, tokens);
  return Math.max(1, Math.min(tokens, 2 ** Math.floor(Math.log2(16 * Math.sqrt(tokens)))));
}

/** The parts of an ivf section that change the index bytes. */
export function ivfKeyConfig(c: IndexConfig, tokens: number): Record<string, unknown> {
  return {
    centroids: ivfCentroids(c, tokens),
    residualBits: c.residualBits ?? IVF_DEFAULT_BITS,
    layout: 'clusters-blocked16',
  };
}

/** The search settings of an ivf section (nprobe; over-fetch, margin and a `warp` floor when set). */
export function ivfSearch(c: IndexConfig): {
  nprobe: number;
  probeSlack?: number;
  maxProbe?: number;
  overFetch?: number;
  margin?: number;
  floor?: 'warp';
  centroidProduct?: 'int8';
} {
  return {
    nprobe: c.nprobe ?? IVF_DEFAULT_NPROBE,
    ...(c.probeSlack === undefined ? {} : { probeSlack: c.probeSlack }),
    ...(c.maxProbe === undefined ? {} : { maxProbe: c.maxProbe }),
    ...(c.overFetch === undefined ? {} : { overFetch: c.overFetch }),
    ...(c.margin === undefined ? {} : { margin: c.margin }),
    ...(c.floor === 'warp' ? { floor: 'warp' as const } : {}),
    ...(c.centroidProduct === 'int8' ? { centroidProduct: 'int8' as const } : {}),
  };
}

interface Side {
  readonly model: CodecModel;
  readonly codes: Uint8Array | CodeSource;
  readonly tokenOffsets: ArrayLike<number>;
  readonly ids?: readonly string[];
}

/**
 * Trains the index over the codec's decoded codes with onnxruntime's kernel (k-means steps and
 * the assignment as its top-1) and writes its bytes to `dir/ivf.bin`; returns the seconds.
 */
export async function buildIvfFile(dir: string, c: IndexConfig, side: Side): Promise<number> {
  const t0 = performance.now();
  const kernel = new OrtSimilarityKernel();
  try {
    const tokens = side.tokenOffsets[side.tokenOffsets.length - 1]!;
    const index = await IvfTokenIndex.build(
      side,
      { centroids: ivfCentroids(c, tokens), residualBits: c.residualBits ?? IVF_DEFAULT_BITS },
      kernel,
      ivfSearch(c),
    );
    await writeFile(join(dir, IVF_FILE), index.toBytes());
  } finally {
    await kernel.dispose();
  }
  return (performance.now() - t0) / 1000;
}

/**
 * The index over `dir/ivf.bin`, read by position (centroids and offsets resident, each probed
 * cluster's codes read from the file into a scan thread's cache), searching on `searchThreads`
 * threads (not in {@link ivfSearch}: it changes no result, so no key). Close it to end its scan
 * workers and release the file.
 */
export async function openIvf(
  dir: string,
  c: IndexConfig,
  side: Side,
  kernel: SimilarityKernel,
): Promise<IvfTokenIndex> {
  const threads = c.searchThreads === undefined ? {} : { threads: c.searchThreads };
  return IvfTokenIndex.open(join(dir, IVF_FILE), side, kernel, { ...ivfSearch(c), ...threads });
}
