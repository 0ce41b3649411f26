import { createRequire } from 'node:module';
import type * as Tokenizers from '@anush008/tokenizers';
import { ArtifactCorruptError, DataError } from '@bfe/core';

// @anush008/tokenizers binds the Rust `tokenizers` library (the one Python uses): the same
// normalisation, truncation and post-processing, and its batch encoder was the faster of the
// two maintained readers of tokenizer.json measured here (BENCHMARKS.md).
const require = createRequire(import.meta.url);
const native = require('@anush008/tokenizers') as typeof Tokenizers;

/** One tokenised text: ids with special tokens, and which positions are content. */
export interface TokenizedText {
  /** Token ids including special tokens, truncated to `maxLength`. */
  readonly ids: Int32Array;
  /** 1 where the token is content: not special, not padding, not part of the prefix. */
  readonly content: Uint8Array;
  /** Whether truncation dropped tokens. */
  readonly truncated: boolean;
}

/**
 * Reads a Hugging Face `tokenizer.json` with truncation at `maxLength` and no padding (the
 * file may carry a fixed padding of its own, which batching makes wasteful). `maxLength`
 * undefined: no truncation at all (the windowed pass cuts long texts itself).
 */
export class TextTokenizer {
  readonly #tokenizer: InstanceType<typeof native.Tokenizer>;
  readonly vocabSize: number;

  constructor(
    path: string,
    readonly maxLength: number | undefined,
  ) {
    try {
      this.#tokenizer = native.Tokenizer.fromFile(path);
    } catch (cause) {
      throw new ArtifactCorruptError(
        `${path}: not a readable tokenizer.json (${(cause as Error).message})`,
        { cause },
      );
    }
    if (maxLength === undefined) this.#tokenizer.disableTruncation();
    else this.#tokenizer.setTruncation(maxLength);
    this.#tokenizer.disablePadding();
    this.vocabSize = this.#tokenizer.getVocabSize(true);
  }

  /**
   * The vocabulary piece of token `id` (`'##ing'`, `'[CLS]'`), or `undefined` for an id outside
   * the vocabulary: what token evidence shows beside a similarity.
   * @example tokenizer.tokenText(2023) // 'this' (MiniLM)
   */
  tokenText(id: number): string | undefined {
    return this.#tokenizer.idToToken(id) ?? undefined;
  }

  /**
   * Tokenises a batch. With a `prefix` (e5's `query: `), the prefix is prepended — so the
   * pooled vector sees it, as the model expects — and its tokens are marked non-content.
   *
   * A prefix token is one that lies wholly inside the prefix (its end offset is at most the
   * prefix's length). A SentencePiece tokenizer folds the prefix's trailing space into the next
   * piece (`▁hello` spans the space and `hello`), so a token that merely starts inside the
   * prefix is the text's first word, and stays content.
   * @throws {DataError} for a non-string input.
   * @example
   * await tokenizer.encode(['hello'], 'query: ');
   * // e5: ids [<s>, ▁query, :, ▁hello, </s>], content [0, 0, 0, 1, 0]
   */
  async encode(texts: readonly unknown[], prefix = ''): Promise<TokenizedText[]> {
    const inputs: string[] = new Array<string>(texts.length);
    for (let i = 0; i < texts.length; i++) {
      const t = texts[i];
      if (typeof t !== 'string')
        throw new DataError(`text [${i}] is ${t === null ? 'null' : typeof t}, not a string`);
      inputs[i] = prefix + t;
    }
    const encodings = await this.#tokenizer.encodeBatch(inputs);
    const out: TokenizedText[] = new Array<TokenizedText>(encodings.length);
    for (let i = 0; i < encodings.length; i++) {
      const e = encodings[i]!;
      const ids = Int32Array.from(e.getIds());
      const special = e.getSpecialTokensMask();
      const offsets = prefix === '' ? undefined : e.getOffsets();
      const content = new Uint8Array(ids.length);
      for (let j = 0; j < ids.length; j++) {
        const inPrefix = offsets !== undefined && offsets[j]![1]! <= prefix.length;
        content[j] = special[j] === 0 && !inPrefix ? 1 : 0;
      }
      out[i] = { ids, content, truncated: e.getOverflowing().length > 0 };
    }
    return out;
  }
}
