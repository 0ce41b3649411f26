import { open } from 'node:fs/promises';

/** One read call's bytes: below Node's 2 GiB limit of a single read. */
const PIECE = 1 << 30;

/**
 * Reads a whole codes file (`codes.bin` of the index stage) into a fresh, aligned `Uint8Array`,
 * in pieces, so files over 2 GiB (fp32 codes of LongMemEval-S: 2.83 GB) read too, where
 * `readFile` refuses them.
 *
 * @example
 * const codes = await readCodesFile(join(dir, 'codes.bin'));
 */
export async function readCodesFile(path: string): Promise<Uint8Array> {
  const file = await open(path, 'r');
  try {
    const { size } = await file.stat();
    const out = new Uint8Array(size);
    for (let at = 0; at < size;) {
      const { bytesRead } = await file.read(out, at, Math.min(PIECE, size - at), at);
      if (bytesRead === 0) throw new Error(`${path}: ended at byte ${at} of ${size}`);
      at += bytesRead;
    }
    return out;
  } finally {
    await file.close();
  }
}
