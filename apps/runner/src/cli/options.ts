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
