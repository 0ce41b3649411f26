import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bm25Tokens, bm25Words, foldText } from './bm25-text.js';

describe('foldText', () => {
  it('normalises (NFKC) and folds case, ß included', () => {
    expect(foldText('Straße')).toBe('strasse');
    expect(foldText('STRASSE')).toBe('strasse');
    // Full-width letters and digits, a ligature, a decomposed é.
    expect(foldText('ＣＡＦＥ １２３ ﬁle cafe\u0301')).toBe('cafe 123 file café');
    expect(foldText('ΟΔΟΣ')).toBe(foldText('οδος'));
  });
});

describe('bm25Words: no word of any script is dropped', () => {
  it('keeps accented Latin words whole, composed or not', () => {
    expect(bm25Words('Café, crème brûlée; naïve Ærøskøbing')).toEqual([
      'café',
      'crème',
      'brûlée',
      'naïve',
      'ærøskøbing',
    ]);
    expect(bm25Words('cafe\u0301')).toEqual(bm25Words('café'));
    // An accent makes another word: café is not cafe.
    expect(bm25Words('café')).not.toEqual(bm25Words('cafe'));
    expect(bm25Words('Die Straße, DIE STRASSE')).toEqual(['die', 'strasse', 'die', 'strasse']);
  });

  it('keeps Cyrillic, Greek, Arabic and Hebrew words', () => {
    expect(bm25Words('Привет, мир! Ёжик в тумане.')).toEqual([
      'привет',
      'мир',
      'ёжик',
      'в',
      'тумане',
    ]);
    expect(bm25Words('Καλημέρα κόσμε')).toEqual(['καλημέρα', 'κόσμε']);
    // Arabic with its diacritics (marks stay inside the word).
    expect(bm25Words('مَرْحَبًا بالعالم، كيف حالك؟')).toEqual(['مَرْحَبًا', 'بالعالم', 'كيف', 'حالك']);
    expect(bm25Words('שלום עולם')).toEqual(['שלום', 'עולם']);
  });

  it('splits Chinese and Japanese into one word per Han or Kana character', () => {
    expect(bm25Words('我喜欢猫。')).toEqual(['我', '喜', '欢', '猫']);
    expect(bm25Words('東京タワーに行きました')).toEqual([
      '東',
      '京',
      'タ',
      'ワ',
      'ー',
      'に',
      '行',
      'き',
      'ま',
      'し',
      'た',
    ]);
    // Half-width Katakana become full-width (NFKC); a Latin run beside Han stays a word.
    expect(bm25Words('ｶﾀｶﾅ')).toEqual(['カ', 'タ', 'カ', 'ナ']);
    expect(bm25Words('iPhone15を買った')).toEqual(['iphone15', 'を', '買', 'っ', 'た']);
  });

  it('keeps Hangul and Thai runs whole', () => {
    expect(bm25Words('서울에서 만나요')).toEqual(['서울에서', '만나요']);
    expect(bm25Words('ภาษาไทย ง่าย')).toEqual(['ภาษาไทย', 'ง่าย']);
  });

  it('splits on punctuation, symbols, underscores, apostrophes and hyphens; keeps digits', () => {
    expect(bm25Words("don't e-mail me_at 10:30, £5 or 3.14!")).toEqual([
      'don',
      't',
      'e',
      'mail',
      'me',
      'at',
      '10',
      '30',
      '5',
      'or',
      '3',
      '14',
    ]);
    expect(bm25Words('  …  !!  ')).toEqual([]);
  });

  it('drops nothing: every letter and digit of the folded text is in some word', () => {
    const letters = /[\p{L}\p{N}]/gu;
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 40 }), (s) => {
        const inText = [...foldText(s).matchAll(letters)].map((m) => m[0]).join('');
        const inWords = [...bm25Words(s).join('').matchAll(letters)].map((m) => m[0]).join('');
        expect(inWords).toBe(inText);
      }),
      { numRuns: 300, seed: 42 },
    );
  });
});

describe('bm25Tokens', () => {
  it("'english': elisions, stop words and Porter2 stems, as the former preparation", () => {
    expect(bm25Tokens('The CATS were Running, to Lisbon!', 'english')).toEqual([
      'cat',
      'run',
      'lisbon',
    ]);
    expect(bm25Tokens("Caroline isn't running; I cannot go, it's late", 'english')).toEqual([
      'carolin',
      'not',
      'run',
      'can',
      'not',
      'go',
      'late',
    ]);
    expect(bm25Tokens('the a of and', 'english')).toEqual([]);
    // Other scripts pass through the English steps unharmed.
    expect(bm25Tokens('Привет мир 猫', 'english')).toEqual(['привет', 'мир', '猫']);
  });

  it("'none': the words as they are, stop words and inflections kept", () => {
    expect(bm25Tokens('The CATS were Running', 'none')).toEqual(['the', 'cats', 'were', 'running']);
    expect(bm25Tokens("isn't", 'none')).toEqual(['isn', 't']);
  });
});
