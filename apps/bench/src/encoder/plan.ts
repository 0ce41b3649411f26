/** What `pnpm bench:encoder` measures: one plan per peer and setting, in order. */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { ModelManifest } from '@bfe/models';
import { MODEL_NAME, type Cli } from './cli.js';
import { buildHfLayout, wheelModelDir } from './model.js';
import type { BenchJob, Peer, PeerResult } from './protocol.js';
import { parseVariant } from './variants.js';

/** One planned measurement: a job without the per-run paths, and a label for the table. */
export interface Plan {
  readonly peer: Peer;
  readonly setting: string;
  readonly job: Omit<BenchJob, 'textsFile' | 'resultFile' | 'sample' | 'warmupTexts' | 'maxLength'>;
}

export interface Row {
  readonly peer: Peer;
  readonly setting: string;
  readonly result: PeerResult;
  /** 1-minute load average when the measurement ended. */
  readonly load?: number;
}

/**
 * Indices whose pooled vectors every peer returns: evenly spaced ones plus the longest text
 * (often truncated), so agreement is checked where truncation differs too.
 */
export function sampleIndices(lengths: readonly number[]): number[] {
  const n = lengths.length;
  const picked = new Set<number>();
  for (let k = 0; k < 8 && n > 0; k++) picked.add(Math.floor((k * (n - 1)) / 7));
  let longest = 0;
  for (let i = 1; i < n; i++) if (lengths[i]! > lengths[longest]!) longest = i;
  if (n > 0) picked.add(longest);
  return [...picked].sort((a, b) => a - b);
}

/**
 * Every measurement to run, in order. A peer whose files cannot be prepared becomes a failed
 * row right away (reported, not dropped).
 */
export async function planRuns(
  cli: Cli,
  modelDir: string,
  manifest: ModelManifest,
  work: string,
  rows: Row[],
): Promise<Plan[]> {
  const plans: Plan[] = [];
  if (cli.peers.includes('bfe')) {
    const { threads } = cli;
    for (const spec of cli.bfeVariants) {
      const parts = [`threads=${threads}`];
      if (spec !== 'default')
        parts.push(spec.replace(/model=([^+]+)/, (_, dir: string) => `model=${basename(dir)}`));
      plans.push({
        peer: 'bfe',
        setting: parts.join(' '),
        job: { peer: 'bfe', threads, modelDir, manifest, variant: parseVariant(spec), work },
      });
    }
  }
  if (cli.peers.includes('transformers-js')) {
    try {
      const hfRoot = await buildHfLayout(cli, modelDir, manifest, join(work, 'hf'));
      for (const batchSize of cli.batchSizes) {
        plans.push({
          peer: 'transformers-js',
          setting: `batch=${batchSize}`,
          job: {
            peer: 'transformers-js',
            threads: cli.threads,
            hfRoot,
            hfModel: MODEL_NAME,
            batchSize,
          },
        });
      }
    } catch (error) {
      rows.push({
        peer: 'transformers-js',
        setting: '-',
        result: { ok: false, error: (error as Error).message },
      });
    }
  }
  if (cli.peers.includes('sentence-transformers')) {
    if (!existsSync(cli.python)) {
      const error = `no Python at ${cli.python} (set BFE_PYTHON to a python with tools/model/requirements.txt installed)`;
      rows.push({ peer: 'sentence-transformers', setting: '-', result: { ok: false, error } });
    } else {
      const stModelDir = cli.stModelDir ?? wheelModelDir(cli.python);
      for (const passive of cli.stPassive ? [false, true] : [false]) {
        for (const batchSize of cli.batchSizes) {
          plans.push({
            peer: 'sentence-transformers',
            setting: `batch=${batchSize}${passive ? ' omp-passive' : ''}`,
            job: {
              peer: 'sentence-transformers',
              threads: cli.threads,
              batchSize,
              ...(stModelDir === undefined ? {} : { stModelDir }),
              ...(passive ? { ompPassive: true } : {}),
            },
          });
        }
      }
    }
  }
  return plans;
}
