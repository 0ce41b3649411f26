import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, DataError } from '@bfe/core';
import { TextTokenizer } from './tokenizer.js';

const tiny = fileURLToPath(new URL('../fixtures/tiny-tokenizer.json', import.meta.url));
// A SentencePiece Unigram tokenizer (Metaspace, prepend always), like e5's: `query: hello` is
// `▁query`, `:`, `▁hello`, the prefix's trailing space folded into the first word's piece.
const unigram = fileURLToPath(new URL('../fixtures/tiny-unigram-tokenizer.json', import.meta.url));

describe('TextTokenizer', () => {
  it('marks special tokens as non-content', async () => {
    const [t] = await new TextTokenizer(tiny, 16).encode(['Hello world']);
    expect(Array.from(t!.ids)).toEqual([2, 4, 5, 3]);
    expect(Array.from(t!.content)).toEqual([0, 1, 1, 0]);
    expect(t!.truncated).toBe(false);
  });

  it('truncates at maxLength, keeps the closing special token, and reports it', async () => {
    const [t] = await new TextTokenizer(tiny, 5).encode(['the cat sat on a mat']);
    expect(Array.from(t!.ids)).toEqual([2, 9, 10, 11, 3]);
    expect(t!.truncated).toBe(true);
  });

  it('excludes the prefix from content tokens but keeps it in the ids', async () => {
    const [t] = await new TextTokenizer(tiny, 16).encode(['the cat'], 'query: ');
    expect(Array.from(t!.ids)).toEqual([2, 6, 7, 9, 10, 3]);
    expect(Array.from(t!.content)).toEqual([0, 0, 0, 1, 1, 0]);
  });

  it('keeps the first word when SentencePiece folds the prefix space into it', async () => {
    const tok = new TextTokenizer(unigram, 16);
    const [q, p] = await tok.encode(['hello world', '東京'], 'query: ');
    // <s> ▁query : ▁hello ▁world </s>: ▁hello starts on the prefix's space but is the text.
    expect(Array.from(q!.ids)).toEqual([0, 4, 5, 7, 8, 2]);
    expect(Array.from(q!.content)).toEqual([0, 0, 0, 1, 1, 0]);
    expect(tok.tokenText(7)).toBe('▁hello');
    // <s> ▁passage : ▁ 東京 </s>: here the space is a piece of its own, and it is the prefix's.
    const [r] = await tok.encode(['東京'], 'passage: ');
    expect(Array.from(r!.ids)).toEqual([0, 9, 5, 6, 10, 2]);
    expect(Array.from(r!.content)).toEqual([0, 0, 0, 0, 1, 0]);
    expect(Array.from(p!.content)).toEqual([0, 0, 0, 0, 1, 0]);
  });

  it('gives an empty text after a SentencePiece prefix no content token', async () => {
    const [t] = await new TextTokenizer(unigram, 16).encode([''], 'query: ');
    expect(Array.from(t!.ids)).toEqual([0, 4, 5, 6, 2]);
    expect(Array.from(t!.content)).toEqual([0, 0, 0, 0, 0]);
  });

  it('leaves an empty or whitespace-only text with no content token', async () => {
    const out = await new TextTokenizer(tiny, 16).encode(['', '   ']);
    expect(out.map((t) => Array.from(t.content))).toEqual([
      [0, 0],
      [0, 0],
    ]);
  });

  it('refuses non-strings with the offending index', async () => {
    await expect(new TextTokenizer(tiny, 16).encode(['ok', 3])).rejects.toThrow(DataError);
    await expect(new TextTokenizer(tiny, 16).encode([null])).rejects.toThrow(/text \[0\] is null/);
  });

  it('refuses a file that is not a tokenizer', () => {
    expect(() => new TextTokenizer(fileURLToPath(import.meta.url), 16)).toThrow(
      ArtifactCorruptError,
    );
  });

  it('names the vocabulary piece of an id, and nothing outside the vocabulary', () => {
    const t = new TextTokenizer(tiny, 16);
    expect(t.tokenText(2)).toBe('[CLS]');
    expect(t.tokenText(4)).toBe('hello');
    expect(t.tokenText(1000)).toBeUndefined();
  });

  it('reports its vocabulary size', () => {
    expect(new TextTokenizer(tiny, 16).vocabSize).toBe(18);
  });
});
