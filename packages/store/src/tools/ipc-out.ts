import type { FileHandle } from 'node:fs/promises';
import { AsyncByteQueue, RecordBatchFileWriter, type RecordBatch, type Schema } from 'apache-arrow';
import { toStorageError } from '@bfe/core';

/**
 * The writer's sink: collects the bytes each `write` produces (synchronously) so they go to
 * disk before the next batch is made. Piping the writer's own queue into a file stream would
 * let a fast producer queue the whole store in memory.
 */
class ChunkSink extends AsyncByteQueue {
  chunks: Uint8Array[] = [];
  override write(value: Uint8Array): void {
    if (value.byteLength > 0) this.chunks.push(value);
  }
  take(): Uint8Array[] {
    const out = this.chunks;
    this.chunks = [];
    return out;
  }
}

/**
 * An Arrow IPC file written batch by batch (`RecordBatchFileWriter`) through an open file
 * handle, each batch's bytes on disk before {@link IpcFileOut.write} resolves. Pair it with
 * `writeWithHandle` (`@bfe/core`), which writes to a temporary sibling and renames it into
 * place, so a reader never sees half a file.
 * @example
 * await writeWithHandle('out/x.arrow', async (handle) => {
 *   const out = await IpcFileOut.start(handle, 'out/x.arrow', schema);
 *   await out.write(batch); // one record batch
 *   await out.finish(); // the footer; returns the file's size
 * });
 */
export class IpcFileOut {
  readonly #writer = new RecordBatchFileWriter();
  readonly #sink = new ChunkSink();
  #bytes = 0;

  private constructor(
    readonly handle: FileHandle,
    /** The file's final path, for error messages. */
    readonly path: string,
  ) {}

  /** Writes the schema (an empty file still has one). */
  static async start(handle: FileHandle, path: string, schema: Schema): Promise<IpcFileOut> {
    const out = new IpcFileOut(handle, path);
    out.#writer.reset(out.#sink, schema);
    await out.#drain();
    return out;
  }

  /** Appends one record batch (of the file's schema) and waits until its bytes are written. */
  async write(batch: RecordBatch): Promise<void> {
    this.#writer.write(batch);
    await this.#drain();
  }

  /** Writes the footer; returns the file's size in bytes. */
  async finish(): Promise<number> {
    this.#writer.close(); // the footer goes to the sink first
    await this.#drain();
    return this.#bytes;
  }

  async #drain(): Promise<void> {
    const chunks = this.#sink.take();
    if (chunks.length === 0) return;
    let total = 0;
    for (const c of chunks) total += c.byteLength;
    try {
      // One writev for the batch's many small pieces (message prefixes, padding, buffers).
      let written = (await this.handle.writev(chunks)).bytesWritten;
      // A short write (a signal, a nearly full disk): the rest piece by piece.
      for (const c of chunks) {
        if (written >= c.byteLength) {
          written -= c.byteLength;
          continue;
        }
        for (let at = written; at < c.byteLength;) {
          const { bytesWritten } = await this.handle.write(c, at, c.byteLength - at);
          at += bytesWritten;
        }
        written = 0;
      }
    } catch (error) {
      throw await toStorageError(error, this.path, total);
    }
    this.#bytes += total;
  }
}
