export type { BankView, EncodedTexts, Embedder, MemoryMeta } from './types.js';
