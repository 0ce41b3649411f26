import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, cpus, platform, release, totalmem } from 'node:os';
import type { ModelManifest } from '@bfe/models';
import type { Experiment } from './config.js';
import type { StageRecord } from './stage.js';
import type { EncodingSummary } from './stages/encode.js';

const require = createRequire(import.meta.url);

/** Inputs of {@link buildReceipt}. */
export interface ReceiptInput {
  readonly experiment: Experiment;
  readonly configPath: string;
  readonly argv: readonly string[];
  readonly sources: ReadonlyArray<{ readonly name: string; readonly sha256: string }>;
  readonly modelManifest: ModelManifest;
  readonly bankManifestSha256: string;
  /** What the encoder truncated or windowed (memories, queries). */
  readonly encoding: EncodingSummary;
  /** Per training seed: the split it used (seeds sharing one split list one hash). */
  readonly splits: ReadonlyArray<{
    readonly seed: number | null;
    readonly splitSeed: number | null;
    readonly hash: string | null;
  }>;
  /** The evaluated part is train or validation data (see isSelectionData). */
  readonly selectionData: boolean;
  readonly stages: readonly StageRecord[];
  readonly cacheRoot: string;
  readonly seconds: number;
}

/** `receipt.json`: what ran, on what, from which code, at what cost. */
export type Receipt = ReturnType<typeof receiptOf>;

/**
 * The run's receipt: the exact command and resolved config, the source commit and whether the
 * tree was dirty, dataset/model/bank/split hashes, execution providers and the machine,
 * package versions, per-stage timings and cache hits, and peak RSS.
 */
export async function buildReceipt(input: ReceiptInput): Promise<Receipt> {
  return receiptOf(input, git());
}

function receiptOf(input: ReceiptInput, source: { commit: string | null; dirty: boolean | null }) {
  const e = input.experiment;
  return {
    schemaVersion: 1 as const,
    command: ['bfe', ...input.argv],
    configFile: input.configPath,
    config: e,
    // HNSW graphs built on several threads (`index.buildThreads` > 1) are not reproducible;
    // results.json's meta.index says so too. Left out otherwise.
    ...(e.index?.backend === 'hnsw' && (e.index.buildThreads ?? 1) > 1
      ? { deterministic: false as const }
      : {}),
    source,
    dataset: { name: e.dataset.name, files: input.sources },
    model: {
      name: input.modelManifest.name,
      modelId: input.modelManifest.modelId,
      sha256: input.modelManifest.modelSha256,
    },
    bankManifestSha256: input.bankManifestSha256,
    encoding: input.encoding,
    seeds: e.split.policy === 'none' ? [] : e.seeds,
    splits: input.splits,
    evaluate: e.split.policy === 'none' ? 'all' : e.split.evaluate,
    selectionData: input.selectionData,
    executionProviders: { encoder: e.model.executionProvider, scorer: e.scorer.executionProvider },
    device: {
      platform: `${platform()} ${release()} ${arch()}`,
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryBytes: totalmem(),
      // Where WebGPU runs on Mesa's software Vulkan (lavapipe), the ICD in use.
      vulkanIcd: process.env.VK_DRIVER_FILES ?? process.env.VK_ICD_FILENAMES ?? null,
    },
    versions: {
      node: process.version,
      ...Object.fromEntries(
        ['onnxruntime-node', 'apache-arrow', 'zod', '@anush008/tokenizers'].map((name) => [
          name,
          packageVersion(name),
        ]),
      ),
    },
    stages: input.stages,
    cacheRoot: input.cacheRoot,
    seconds: input.seconds,
    peakRssBytes: process.resourceUsage().maxRSS * 1024,
  };
}

function packageVersion(name: string): string | null {
  for (const from of ['@bfe/encoder', '@bfe/scorer', '@bfe/core']) {
    try {
      const base = require.resolve(from);
      const local = createRequire(base);
      const path = local.resolve(`${name}/package.json`);
      return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
    } catch {
      // not a dependency of this package, or no package.json export: try the next
    }
  }
  return null;
}

function git(): { commit: string | null; dirty: boolean | null } {
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain'], { encoding: 'utf8' });
    return { commit, dirty: status.trim() !== '' };
  } catch {
    return { commit: null, dirty: null };
  }
}
