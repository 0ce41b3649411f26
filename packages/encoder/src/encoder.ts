import { join } from 'node:path';
import { ArtifactCorruptError } from '@bfe/core';
import type { ModelManifest } from '@bfe/models';
import { EncoderSession, type SessionOptions } from './onnx-session.js';
import { encodePass, type EncodedChunk, type PassOptions } from './pass.js';
import { TextTokenizer } from './tokenizer.js';

/** A loaded encoder: the model's manifest, its ONNX session and its tokenizer. */
export interface Encoder {
  readonly manifest: ModelManifest;
  readonly maxLength: number;
  /** Encodes texts as passages (memories) or queries, with the model's prefix for that role. */
  encode(
    texts: readonly unknown[],
    role: 'passage' | 'query',
    options?: Omit<PassOptions, 'prefix'>,
  ): AsyncGenerator<EncodedChunk>;
  /** The vocabulary piece of a token id, `undefined` outside the vocabulary. */
  tokenText(id: number): string | undefined;
  dispose(): Promise<void>;
}

/**
 * Opens the encoder a manifest describes. Refuses a tokenizer whose vocabulary does not fit
 * the model's, and a `maxLength` beyond the model's positions.
 */
export async function openEncoder(
  dir: string,
  manifest: ModelManifest,
  options: SessionOptions & { maxLength?: number } = {},
): Promise<Encoder> {
  const maxLength = options.maxLength ?? manifest.maxLength;
  if (maxLength > manifest.maxPositions || maxLength < 2) {
    throw new ArtifactCorruptError(
      `maxLength ${maxLength} is outside 2..${manifest.maxPositions} for ${manifest.name}`,
    );
  }
  const tokenizer = new TextTokenizer(join(dir, manifest.tokenizerFile), maxLength);
  if (tokenizer.vocabSize > manifest.vocabSize) {
    throw new ArtifactCorruptError(
      `${manifest.tokenizerFile} has ${tokenizer.vocabSize} tokens but ${manifest.name} embeds only ${manifest.vocabSize}: the tokenizer does not belong to this model`,
    );
  }
  const session = await EncoderSession.open(join(dir, manifest.onnxFile), options);
  const spec = { pooling: manifest.pooling, normalize: manifest.normalize };
  return {
    manifest,
    maxLength,
    encode(texts, role, passOptions = {}) {
      const prefix = role === 'query' ? manifest.prefixes.query : manifest.prefixes.passage;
      return encodePass(session, tokenizer, spec, texts, { ...passOptions, prefix });
    },
    tokenText: (id) => tokenizer.tokenText(id),
    dispose: () => session.dispose(),
  };
}
