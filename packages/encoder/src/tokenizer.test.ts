import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ArtifactCorruptError, DataError } from '@bfe/core';
import { TextTokenizer } from './tokenizer.js';

const tiny = fileURLToPath(new URL('../fixtures/tiny-tokenizer.json', import.meta.url));

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
