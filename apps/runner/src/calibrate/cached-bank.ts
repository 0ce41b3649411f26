import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { benchmarkHash } from '@bfe/core';
import { BANK_MANIFEST_FILE, bankManifestSchema, openBank, type OpenedBank } from '@bfe/encoder';
import type { Experiment } from '../experiment/config.js';
import type { StageContext } from '../experiment/stage.js';
import type { DatasetStage } from '../experiment/stages/dataset.js';
import { runEncodeStage } from '../experiment/stages/encode.js';
import { encodeIdentity } from '../experiment/stages/encode-shard.js';

/** An encoded bank and where it came from. */
export interface EncodedBank {
  readonly bank: OpenedBank;
  /** `content`: an earlier encode of the same content; `stage`: the encode stage's artifact. */
  readonly source: 'content' | 'stage';
  readonly dir: string;
}

/**
 * The experiment's encoded bank, in memory. An encode artifact is keyed by its code's version
 * too, so an edit to the encoder's packages (or their docs) leaves an earlier encoding of the
 * same texts unreachable by key; this looks for one by content first — a bank whose manifest
 * names the same benchmark hash, model SHA-256, truncation and dtype, without windows, its
 * files verified against their SHA-256 when opened — and runs the encode stage only when
 * there is none (encoding LongMemEval-S takes half an hour on two cores).
 */
export async function encodedBank(
  ctx: StageContext,
  cacheRoot: string,
  e: Experiment,
  dataset: DatasetStage,
): Promise<EncodedBank> {
  if (e.model.window !== undefined)
    throw new Error('encodedBank: windowed banks are not looked up');
  const { benchmark } = await dataset.load();
  const hash = benchmarkHash(benchmark);
  const id = await encodeIdentity(e, dataset);
  const encodes = join(cacheRoot, 'objects', 'encode');
  let keys: string[] = [];
  try {
    keys = (await readdir(encodes)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  for (const key of keys) {
    const dir = join(encodes, key, 'bank');
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(join(dir, BANK_MANIFEST_FILE), 'utf8'));
    } catch {
      continue; // not a bank (or unreadable): the stage's own checks judge it when used
    }
    const parsed = bankManifestSchema.safeParse(raw);
    if (!parsed.success) continue;
    const m = parsed.data;
    if (
      m.benchmarkHash === hash &&
      m.model.sha256 === id.modelManifest.modelSha256 &&
      m.maxLength === id.config.maxLength &&
      m.dtype === e.model.dtype &&
      m.window === undefined
    ) {
      ctx.log(`encode: the same content encoded before, ${key.slice(0, 12)}… (verifying)`);
      return { bank: await openBank(dir, { window: null }), source: 'content', dir };
    }
  }
  const stage = await runEncodeStage(ctx, e, dataset);
  return { bank: await stage.bank(), source: 'stage', dir: join(stage.artifact.dir, 'bank') };
}
