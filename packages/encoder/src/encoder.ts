import { join } from 'node:path';
import { ArtifactCorruptError, ConfigError } from '@bfe/core';
import type { ModelManifest } from '@bfe/models';
import { EncoderSession, type SessionOptions } from './onnx-session.js';
import { encodePass, type EncodedChunk, type PassOptions } from './pass.js';
import { TextTokenizer } from './tokenizer.js';
import type { WindowSpec } from './window.js';

/** A loaded encoder: the model's manifest, its ONNX session and its tokenizer. */
export interface Encoder {
  readonly manifest: ModelManifest;
  /** Truncation of queries, and of memories when there is no window. */
  readonly maxLength: number;
  /** Memories (passages) longer than `window.size` are encoded as windows; queries never are. */
  readonly window?: WindowSpec | undefined;
  /**
   * Encodes texts as passages (memories) or queries, with the model's prefix for that role. A
   * passage call's `options.window` windows that call (checked as `openEncoder` checks its
   * window) whatever the encoder was opened with; a query call ignores it.
   */
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
 * the model's, a `maxLength` or window size beyond the model's positions, a stride larger than
 * the window, and a window for a model whose pooling is not the mean.
 */
export async function openEncoder(
  dir: string,
  manifest: ModelManifest,
  options: SessionOptions & { maxLength?: number; window?: WindowSpec } = {},
): Promise<Encoder> {
  const maxLength = options.maxLength ?? manifest.maxLength;
  if (maxLength > manifest.maxPositions || maxLength < 2) {
    throw new ArtifactCorruptError(
      `maxLength ${maxLength} is outside 2..${manifest.maxPositions} for ${manifest.name}`,
    );
  }
  const window = options.window;
  if (window !== undefined) checkWindow(window, manifest);
  const tokenizer = new TextTokenizer(join(dir, manifest.tokenizerFile), maxLength);
  // Memories are tokenised whole when windowed: the pass cuts them into windows. Made at the
  // first windowed call when only calls ask for windows.
  let whole =
    window === undefined
      ? undefined
      : new TextTokenizer(join(dir, manifest.tokenizerFile), undefined);
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
    window,
    encode(texts, role, passOptions = {}) {
      const { window: asked, ...rest } = passOptions;
      if (role === 'query')
        return encodePass(session, tokenizer, spec, texts, {
          ...rest,
          prefix: manifest.prefixes.query,
        });
      const w = asked ?? window;
      if (w === undefined)
        return encodePass(session, tokenizer, spec, texts, {
          ...rest,
          prefix: manifest.prefixes.passage,
        });
      if (asked !== undefined) checkWindow(asked, manifest);
      whole ??= new TextTokenizer(join(dir, manifest.tokenizerFile), undefined);
      return encodePass(session, whole, spec, texts, {
        ...rest,
        prefix: manifest.prefixes.passage,
        window: w,
      });
    },
    tokenText: (id) => tokenizer.tokenText(id),
    dispose: () => session.dispose(),
  };
}

function checkWindow(window: WindowSpec, manifest: ModelManifest): void {
  const { size, stride } = window;
  if (!Number.isInteger(size) || size < 3 || size > manifest.maxPositions)
    throw new ConfigError(
      `window.size ${size} is outside 3..${manifest.maxPositions} for ${manifest.name}`,
    );
  if (!Number.isInteger(stride) || stride < 1 || stride >= size)
    throw new ConfigError(`window.stride ${stride} must be an integer in 1..${size - 1}`);
  if (manifest.pooling !== 'mean')
    throw new ConfigError(
      `${manifest.name} pools by ${manifest.pooling}: windowed memories are defined for mean pooling only`,
      { suggestion: 'Leave model.window out (truncate at maxLength) for this model.' },
    );
}
