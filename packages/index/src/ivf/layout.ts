// The clustered index's code layout: blocks of 16 layout places, byte `j` of the block's 16
// tokens side by side (what the fast scan reads; the scan threads import only this and the scan).

/** Residual bits per dimension: 2 (4 buckets, 4 dims a byte) or 4 (16 buckets, 2 dims a byte). */
export type ResidualBits = 2 | 4;

/** Layout places per code block. */
export const IVF_BLOCK = 16;

/** Bytes of one token's packed codes. */
export function codeBytes(dim: number, bits: ResidualBits): number {
  return (dim * bits) / 8;
}

/** Bytes of `tokens` tokens' codes in the blocked layout (whole blocks). */
export function blockedCodeBytes(tokens: number, dim: number, bits: ResidualBits): number {
  return Math.ceil(tokens / IVF_BLOCK) * IVF_BLOCK * codeBytes(dim, bits);
}

/** Where byte 0 of place `p`'s code is in the blocked layout (its byte `j` is `16 · j` on). */
export function blockedCodeAt(place: number, bytes: number): number {
  return (place >> 4) * bytes * IVF_BLOCK + (place & (IVF_BLOCK - 1));
}
