import { resolve } from 'node:path';
import { openEncoder, type Encoder } from '@bfe/encoder';
import { loadModelManifest, resolveModelDir, type ModelManifest } from '@bfe/models';
import { encodedTexts } from './encode.js';
import type { Embedder } from '../types.js';

/** Which model: an installed one by registry name (the model cache), or a model directory. */
export type ModelChoice = string | { readonly dir: string };

export interface EmbedderOptions {
  readonly model: ModelChoice;
  /** Truncation length (tokens, special tokens included); the model's default otherwise. */
  readonly maxLength?: number;
  /** onnxruntime intra-op threads. */
  readonly threads?: number;
}

/**
 * Opens the encoder of an installed model (resolved as the runner resolves it: a name in the
 * model cache, `$BFE_MODEL_DIR` or `~/.cache/bfe/models`, or an explicit directory) as an
 * {@link Embedder}: one pass per call ({@link encodedTexts}, the experiment's pass), windowed
 * for a passage call that names a window (as the experiment's `model.window`).
 * @throws DataMissingError when the model is not installed (suggests `bfe model fetch`)
 * @example
 * const embedder = await openEmbedder({ model: 'all-minilm-l6-v2' });
 * const e = await embedder.encode(['the cat sat'], 'passage');
 * e.pooled.length === 384; e.tokenOffsets[1] === 3; // 3 content tokens
 * const long = await embedder.encode([article], 'passage', { window: { size: 256, stride: 192 } });
 * long.truncated[0] === 0; // every content token kept, positions 1… in the untruncated input
 */
export async function openEmbedder(options: EmbedderOptions): Promise<Embedder> {
  const { encoder, manifest } = await openModelEncoder(options);
  return {
    model: manifest.modelSha256,
    dim: manifest.dimension,
    encode: (texts, role, embed = {}) => encodedTexts(encoder, texts, role, embed),
    tokenText: (id) => encoder.tokenText(id) ?? `[${id}]`,
    dispose: () => encoder.dispose(),
  };
}

/** The model's manifest and its encoder, resolved as {@link openEmbedder} resolves them. */
export async function openModelEncoder(
  options: EmbedderOptions,
): Promise<{ encoder: Encoder; manifest: ModelManifest }> {
  const dir =
    typeof options.model === 'string' ? resolveModelDir(options.model) : resolve(options.model.dir);
  const manifest = await loadModelManifest(dir);
  const encoder = await openEncoder(dir, manifest, {
    ...(options.maxLength === undefined ? {} : { maxLength: options.maxLength }),
    ...(options.threads === undefined ? {} : { threads: options.threads }),
  });
  return { encoder, manifest };
}
