// The clustered index and its file: a state opened from an `ivf.bin` (codes read by position, or
// read whole into the scan's memory), and a state's bytes written out.
import type { CodecSide } from '../codec-index.js';
import { ivfBytes, openIvfFile, writeIvfFile } from './bytes.js';
import { codeBytes } from './layout.js';
import type { IvfOpenOptions } from './options.js';
import { DEFAULT_CACHE_BYTES, pagedCodes, readFileRange, readFully } from './paged.js';
import { IvfState } from './state.js';
import type { IvfData } from './train.js';

/**
 * The state of the index in `path` over `side`: its small arrays read, its codes left in the
 * file (each scan lane's cache of `cacheBytes`), or with `resident` read whole straight into the
 * scan's memory.
 */
export function openFileState(path: string, side: CodecSide, open: IvfOpenOptions): IvfState {
  const file = openIvfFile(path);
  const data = { ...file.data, codes: new Uint8Array(0) };
  if (open.resident === true) {
    return new IvfState(side, data, undefined, (into) => readFileRange(path, into, file.codesAt));
  }
  const bytes = codeBytes(file.data.dim, file.data.residualBits);
  const cache = open.cacheBytes ?? DEFAULT_CACHE_BYTES;
  const codes = pagedCodes(file.data.clusterOffsets, bytes, file, cache);
  return new IvfState(side, data, { path, codes, fd: -1 });
}

/** The laid-out state's data with its codes (read from its file when paged). */
function laidOutData(state: IvfState): IvfData {
  if (state.base.tails.tokens > 0 || state.pendingDeletes > 0) {
    throw new Error('IVF index has appends or deletions not laid out: compact() it first');
  }
  const { data, paged } = state.base;
  if (paged === undefined) return data;
  const codes = new Uint8Array(paged.codes.codesLength);
  readFully(state.fd(), codes, 0, codes.length, paged.codes.fileAt);
  return { ...data, codes };
}

/** The state's index bytes (`ivfBytes`). */
export function stateBytes(state: IvfState): Uint8Array {
  return ivfBytes(laidOutData(state));
}

/** Writes {@link stateBytes}' bytes to `path` piece by piece, fsynced (`writeIvfFile`). */
export function saveState(state: IvfState, path: string): void {
  writeIvfFile(path, laidOutData(state));
}
