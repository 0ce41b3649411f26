import type { Bm25Language } from '@bfe/scorer';
import type { RowRef } from '../log/live-rows.js';
import type { SegmentRows } from '../log/segment.js';
import type { BankView, ViewLexicon } from '../types.js';
import { BankLexicon } from './bank-lexicon.js';

/** What {@link StoreLexicon.stats} reports. */
export interface LexicalStats {
  readonly language: Bm25Language;
  /** Banks whose postings are kept, and their sizes. */
  readonly banks: Readonly<
    Record<string, { documents: number; terms: number; postings: number; tokens: number }>
  >;
  /** Views scored from the kept postings. */
  readonly indexed: number;
  /** Views scored from postings built for them from their texts (a write came in between). */
  readonly fromView: number;
  /** Banks whose postings were built from their live memories (at first use). */
  readonly built: number;
}

/**
 * The store's lexical index: a {@link BankLexicon} per bank, derived from the bank's live
 * memories at the bank's first `hybrid` search, then kept in step by the writer (each applied
 * add, update and delete, in write order). Derived data, like the HNSW graphs, but never
 * written to disk: it is a function of the acknowledged memories, so a crash cannot leave it
 * stale, and a reopened store derives it again. A view is scored from the kept postings when
 * they hold exactly its memory versions; otherwise (a write landed between the view and its
 * search) from postings built for that view from its texts, cached while the view lives.
 *
 * @example
 * const lexicon = new StoreLexicon('english', (bank) => writer.live.rows(bank));
 * lexicon.forView(view).scores(lexicon.forView(view).queryTerms('grey cats'), view.ids);
 */
export class StoreLexicon implements ViewLexicon {
  readonly language: Bm25Language;
  readonly #liveRows: (bank: string) => ReadonlyMap<string, RowRef> | undefined;
  readonly #banks = new Map<string, BankLexicon>();
  readonly #ofView = new WeakMap<BankView, BankLexicon>();
  #indexed = 0;
  #fromView = 0;
  #built = 0;

  constructor(
    language: Bm25Language,
    liveRows: (bank: string) => ReadonlyMap<string, RowRef> | undefined,
  ) {
    this.language = language;
    this.#liveRows = liveRows;
  }

  /** The writer applied an add or update batch of one bank. */
  added(rows: SegmentRows): void {
    const lex = this.#banks.get(rows.bank);
    if (lex === undefined) return;
    try {
      for (let r = 0; r < rows.ids.length; r++)
        lex.put(rows.ids[r]!, rows.seqs[r]!, rows.texts[r]!);
    } catch {
      // Derived data never fails a write: the bank's postings are derived again at next use.
      this.#banks.delete(rows.bank);
    }
  }

  /** The writer applied a delete of `ids` (each held) from `bank`. */
  deleted(bank: string, ids: readonly string[]): void {
    const lex = this.#banks.get(bank);
    if (lex === undefined) return;
    for (const id of ids) lex.delete(id);
  }

  /** The postings that hold exactly `view`'s memory versions (see the class). */
  forView(view: BankView): BankLexicon {
    const kept = this.#bank(view.bank);
    if (kept.holds(view.ids, view.seqs)) {
      this.#indexed++;
      return kept;
    }
    this.#fromView++;
    let own = this.#ofView.get(view);
    if (own === undefined) {
      own = lexiconOfView(view, this.language);
      this.#ofView.set(view, own);
    }
    return own;
  }

  /** The kept postings of `bank`, derived from its live memories on first use. */
  #bank(bank: string): BankLexicon {
    let lex = this.#banks.get(bank);
    if (lex === undefined) {
      lex = new BankLexicon(this.language);
      for (const [id, { source, row, seq }] of this.#liveRows(bank) ?? new Map<string, RowRef>())
        lex.put(id, seq, source.texts[row]!);
      this.#banks.set(bank, lex);
      this.#built++;
    }
    return lex;
  }

  /** Counts and sizes of the kept postings. */
  stats(): LexicalStats {
    const banks: Record<string, LexicalStats['banks'][string]> = {};
    for (const [bank, lex] of [...this.#banks].sort(([a], [b]) => a.localeCompare(b)))
      banks[bank] = {
        documents: lex.documents,
        terms: lex.terms,
        postings: lex.postings,
        tokens: lex.tokens,
      };
    return {
      language: this.language,
      banks,
      indexed: this.#indexed,
      fromView: this.#fromView,
      built: this.#built,
    };
  }
}

/**
 * BM25 postings of a view's memories built from its texts (a view that carries no store
 * lexicon, or one the store's kept postings do not match).
 *
 * @example
 * lexiconOfView(view, 'english').documents === view.ids.length; // true
 */
export function lexiconOfView(view: BankView, language: Bm25Language): BankLexicon {
  const lex = new BankLexicon(language);
  for (let r = 0; r < view.ids.length; r++)
    lex.put(view.ids[r]!, view.seqs?.[r] ?? r, view.texts[r]!);
  return lex;
}
