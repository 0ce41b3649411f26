import { ConfigError } from '@bfe/core';

/**
 * Parses repeated `--set key=value` options into an object. A value is read as JSON when it
 * parses (`categories=[1,2,3,4,5]`, `includeImageCaptions=false`), else as a plain string.
 */
export function parseSetOptions(pairs: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new ConfigError(`--set expects key=value, got '${pair}'`);
    const key = pair.slice(0, eq);
    const text = pair.slice(eq + 1);
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // not JSON: keep the plain string
    }
    out[key] = value;
  }
  return out;
}

/** Commander collector for repeatable options. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/**
 * Parses `--shard i/n` (0 ≤ i < n).
 * @example parseShardOption('1/4') // { index: 1, count: 4 }
 */
export function parseShardOption(text: string): { index: number; count: number } {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = m === null ? NaN : Number(m[1]);
  const count = m === null ? NaN : Number(m[2]);
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(count) || count < 1 || index >= count) {
    throw new ConfigError(`--shard expects i/n with 0 ≤ i < n (e.g. 0/2), got '${text}'`);
  }
  return { index, count };
}
