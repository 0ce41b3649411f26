/**
 * Holds a request refused by its key's limits (rate or concurrency) for its `Retry-After`, at
 * most a second, before the 429 goes out (a tarpit), so a client
 * that retries at once — closed-loop, as fast as its connections allow — sends about one
 * request per held connection per hold instead of thousands a second, each costing the server
 * its parsing, authorization and answer. Bounded: at most `perKey` held requests per key and
 * `total` in all (beyond, the 429 goes out at once), and all let go when the server closes.
 */
export interface Tarpit {
  /** Resolves after `ms`, at once when the key or the server already holds its most, or on close. */
  hold(principal: object, ms: number): Promise<void>;
  /** Lets every held request go (the server is closing). */
  releaseAll(): void;
  /** Requests held now. */
  readonly held: number;
}

/** The default hold of a rate-refused request, in milliseconds (capped by its `Retry-After`). */
export const DEFAULT_TARPIT_MS = 1000;

/**
 * A {@link Tarpit}.
 * @example
 * const tarpit = createTarpit();
 * await tarpit.hold(grant, 1000); // then answer the 429
 */
export function createTarpit({ perKey = 64, total = 1024 } = {}): Tarpit {
  const perPrincipal = new WeakMap<object, number>();
  const waiting = new Set<() => void>();
  return {
    get held() {
      return waiting.size;
    },
    async hold(principal, ms) {
      const mine = perPrincipal.get(principal) ?? 0;
      if (ms <= 0 || mine >= perKey || waiting.size >= total) return;
      perPrincipal.set(principal, mine + 1);
      let done = (): void => {};
      const held = new Promise<void>((resolve) => {
        const timer = setTimeout(() => done(), ms);
        done = () => {
          clearTimeout(timer);
          waiting.delete(done);
          resolve();
        };
        waiting.add(done);
      });
      try {
        await held;
      } finally {
        perPrincipal.set(principal, (perPrincipal.get(principal) ?? 1) - 1);
      }
    },
    releaseAll() {
      for (const done of [...waiting]) done();
    },
  };
}
