export { trainCodec, encodeTokens, decodeTokens, prepareQuery } from './codecs/codec.js';
export type { TrainCodecOptions } from './codecs/codec.js';
export { codecModelSchema, codecNameSchema, codecShape } from './codecs/model.js';
export type { CodecModel, CodecName } from './codecs/model.js';
export type { ScalarRange } from './codecs/scalar.js';
export { buildHnsw, loadHnsw } from './hnsw/hnsw.js';
export { buildBankedHnsw } from './hnsw/banked.js';
export type { BankedHnsw } from './hnsw/banked.js';
export type { HnswFilter, HnswIndex, HnswOptions, HnswParams, HnswResult } from './hnsw/hnsw.js';
