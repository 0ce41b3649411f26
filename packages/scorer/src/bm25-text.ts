import { createRequire } from 'node:module';

/**
 * BM25's text preparation (METHOD.md §8, "BM25"), the same for memories and queries:
 *
 * 1. Unicode normalisation and case folding: NFKC, then `toUpperCase()` followed by
 *    `toLowerCase()` (an approximation of Unicode full case folding that also folds `ß` to
 *    `ss`, so `Straße`, `STRASSE` and `strasse` meet), then NFKC again (case mapping can leave a
 *    decomposed sequence behind).
 * 2. Words: maximal runs of Unicode letters, digits and combining marks (`[\p{L}\p{N}\p{M}]+`),
 *    of any script; everything else (spaces, punctuation, symbols, `_`, apostrophes, hyphens)
 *    separates words.
 * 3. Scripts written without spaces between words: every Han, Hiragana or Katakana character
 *    (with the marks that follow it) is a word of its own. Single characters rather than
 *    overlapping bigrams, because a one-character word (Chinese `猫`, Japanese `本`) has no bigram
 *    of its own, and a bigram straddling two words is noise: with unigrams every word of the
 *    query meets every word of the memory that holds it, at some loss of precision. Hangul is
 *    written with spaces between words and stays as runs; Thai, Lao, Khmer and Myanmar runs
 *    stay whole (no dictionary segmentation here).
 * 4. With `language: 'english'`, in order: English elisions as the former preparation
 *    (`wink-nlp-utils` 2.1.0, ASCII apostrophe): `n't` becomes ` not`, `cannot` `can not`, `'d 'm 'll 've 're` and the
 *    `'s` of `it's, let's, that's, who's, what's, here's, there's, when's, where's, why's, how's`
 *    are removed (before step 2, which would split them into words of their own); then
 *    wink's English stop words (153) are removed and the Porter2 (Snowball English) stemmer is
 *    applied to every remaining word. With `language: 'none'` words are kept as they are.
 */

/** The language-dependent steps of the preparation: English, or none (any script, as is). */
export type Bm25Language = 'english' | 'none';

interface WinkNlpUtils {
  string: {
    amplifyNotElision(s: string): string;
    removeElisions(s: string): string;
  };
  tokens: { removeWords(tokens: string[]): string[]; stem(tokens: string[]): string[] };
}

// CommonJS without type declarations: loaded through `require`, given the narrow interfaces.
// Loaded on first use: its require builds winkNLP's English model (for a sentence splitter this
// preparation never calls), a second of start-up that every process importing the scorer —
// each `bfe` command — would otherwise pay without ever ranking English text by BM25.
const require = createRequire(import.meta.url);
let winkUtils: WinkNlpUtils | undefined;
const wink = (): WinkNlpUtils => (winkUtils ??= require('wink-nlp-utils') as WinkNlpUtils);

/** `cannot` as two words, as the former preparation's `tokenize0` split it. */
const CANNOT = /\b(can)(not)\b/gi;

/** Runs of letters, digits and marks, any script (`u` flag: code points, not UTF-16 units). */
const WORD = /[\p{L}\p{N}\p{M}]+/gu;
/** Does a word hold a character of a script written without spaces between words? */
const HAS_UNSPACED = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]/u;
/** Within such a word: one unspaced character with its marks, or a run of other characters. */
const UNSPACED_SPLIT =
  /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]\p{M}*|[^\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]+/gu;

/**
 * NFKC, case folding (upper then lower case), NFKC again: step 1 of the preparation.
 *
 * @example
 * foldText('Straße ＣＡＦÉ'); // 'strasse café'
 */
export function foldText(text: string): string {
  return text.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC');
}

/**
 * The words of a text, language-independent (steps 1–3): folded, split into letter/digit/mark
 * runs of any script, Han and Kana one character per word. Nothing of any script is dropped.
 *
 * @example
 * bm25Words('Café au lait, 東京タワー! Привет'); // ['café', 'au', 'lait', '東', '京', 'タ', 'ワ', 'ー', 'привет']
 */
export function bm25Words(text: string): string[] {
  const out: string[] = [];
  for (const [word] of foldText(text).matchAll(WORD)) {
    if (!HAS_UNSPACED.test(word)) {
      out.push(word);
      continue;
    }
    for (const [part] of word.matchAll(UNSPACED_SPLIT)) out.push(part);
  }
  return out;
}

/**
 * The BM25 tokens of a text: {@link bm25Words}, and with `language: 'english'` English
 * elisions resolved first, English stop words removed and Porter2 stems.
 *
 * @example
 * bm25Tokens("Caroline isn't running to the café!", 'english'); // ['carolin', 'not', 'run', 'café']
 * bm25Tokens("Caroline isn't running to the café!", 'none'); // ['caroline', 'isn', 't', 'running', 'to', 'the', 'café']
 */
export function bm25Tokens(text: string, language: Bm25Language): string[] {
  if (language === 'none') return bm25Words(text);
  const nlp = wink();
  const elided = nlp.string.removeElisions(nlp.string.amplifyNotElision(text));
  return nlp.tokens.stem(nlp.tokens.removeWords(bm25Words(elided.replace(CANNOT, '$1 $2'))));
}
