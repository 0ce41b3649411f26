import { join } from 'node:path';
import type { FetchContext } from './fetch-context.js';
import { downloadToFile } from './http-download.js';
import type { ModelManifest } from './model-manifest.js';
import type { HubSource } from './model-spec.js';

/**
 * Downloads a Hub source's pinned files into `work`: the repository at a pinned commit, through
 * `HF_ENDPOINT` when set (a mirror can only serve the same bytes). (Package-internal.)
 */
export async function fetchFromHub(
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
