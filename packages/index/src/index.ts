export { ExactTokenIndex } from './token-index.js';
export type {
  ChunkScoring,
  TokenHits,
  TokenIndex,
  TokenSearchOptions,
  TokenSide,
} from './token-index.js';
export { flatTokenStore } from './token-store.js';
export type { TokenStore } from './token-store.js';
export { fileTokenStore, matrixFileLayoutSchema } from './file-store.js';
export type { FileTokenStoreOptions, MatrixFileLayout } from './file-store.js';
export { TIE_DEPTH, TIE_SEED, TieTally, tieKey, tieOrder, tiedPositions } from './ties.js';
export type { TieCounts, TieOrder } from './ties.js';
export {
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MARGIN,
  DEFAULT_MAX_SCORE_FLOATS,
  effectiveChunkSize,
  exactTopK,
  flatBankSource,
} from './top-k.js';
export type { BankChunkSource, ChunkScorer, ExactTopKOptions, TopKResult } from './top-k.js';
export { RunningTopK } from './running-top-k.js';
export { bestTokensInto, dot64, dotsInto, firstNonFinite } from './dots.js';
export { CandidateBank } from './candidate-bank.js';
export { NonFiniteScoresError } from './kernel.js';
export type { ChunkTopK, ScorePrecision, SimilarityKernel } from './kernel.js';
export { JsSimilarityKernel } from './js-kernel.js';
export { OrtSimilarityKernel } from './ort-kernel.js';
export type { ExecutionProvider, OrtKernelOptions } from './ort-kernel.js';
export {
  GRAPH_NAMES,
  MAX_RESIDENT_BANK_BYTES,
  TOKEN_GRAPH_NAMES,
  similarityGraph,
  tokenSimilarityGraph,
} from './onnx-graph.js';
export {
  INT8_QUERY_LEVELS,
  INT8_RESIDENT_MARGIN,
  int8TopKGraph,
  quantizeRows,
} from './int8-top-k.js';
export type { QuantizedRows } from './int8-top-k.js';
export { graphSessionOptions } from './graph-session.js';
export type { GraphSessionSettings } from './graph-session.js';
export type { SimilarityGraphSpec } from './onnx-graph.js';
export { CODEC_GRAPH_NAMES, codecSimilarityGraph } from './codec-graph.js';
export type { CodecGraphSpec, CodeElement } from './codec-graph.js';
export { codecChunkScoring } from './codec-scan.js';
export { ScorerInputError, searchK } from './errors.js';
export type { ScorerInputReason } from './errors.js';
export { trainCodec, encodeTokens, decodeTokens, prepareQuery } from './codecs/codec.js';
export type { TrainCodecOptions } from './codecs/codec.js';
export { codecModelSchema, codecNameSchema, codecShape } from './codecs/model.js';
export type { CodecModel, CodecName } from './codecs/model.js';
export type { ScalarRange } from './codecs/scalar.js';
export { QUANTILE_ROWS } from './codecs/scalar.js';
export { CODEC_SAMPLE_SEED, hashSampleRows } from './codecs/sample-order.js';
export type { TokenIdentity } from './codecs/sample-order.js';
export {
  DEFAULT_BUILD_THREADS,
  HNSW_INSERT_SEED,
  buildHnsw,
  hnswFileKind,
  insertOrder,
  loadHnsw,
} from './hnsw/hnsw.js';
export { castI8Into, rekindHnswFile } from './hnsw/rekind.js';
export { buildBankedHnsw } from './hnsw/banked.js';
export { createIncrementalHnsw, loadIncrementalHnsw } from './hnsw/incremental.js';
export type { IncrementalHnsw, IncrementalHnswOptions, KeyProposals } from './hnsw/incremental.js';
export { GraphChooser, LAYOUT_FILE, graphGroups, readLayout } from './hnsw/layout.js';
export type { GraphChoice, GraphGroup, GraphLayoutSide } from './hnsw/layout.js';
export type { BankedHnsw } from './hnsw/banked.js';
export type {
  HnswFilter,
  HnswIndex,
  HnswOptions,
  HnswParams,
  HnswResult,
  HnswScalarKind,
} from './hnsw/hnsw.js';
export { CodecExactTokenIndex, codecTokenStore } from './codec-index.js';
export { readCodesFile } from './codes-file.js';
export {
  DEFAULT_CODE_CACHE_ROWS,
  GATHER_GAP_BYTES,
  arrayCodeSource,
  codeFileLayoutSchema,
  codeSourceOf,
  fileCodeSource,
} from './code-source.js';
export type { CodeFileLayout, CodeSource } from './code-source.js';
export { DEFAULT_OPEN_GRAPHS } from './hnsw/parts.js';
export type { CodecSide } from './codec-index.js';
export { graphKindOf, HNSW_MARGIN, HnswTokenIndex, proposalsFor } from './hnsw-index.js';
export type { HnswSide, HnswTokenIndexOptions } from './hnsw-index.js';
export { IvfTokenIndex } from './ivf-index.js';
export type { IvfOpenOptions, IvfParams, IvfScanStats, IvfSearchOptions } from './ivf-index.js';
export { IVF_SAMPLE_SEED, codeBytes, trainIvf } from './ivf/train.js';
export type {
  IvfCodebook,
  IvfData,
  IvfResidualStats,
  IvfTrainOptions,
  IvfTrainParams,
  ResidualBits,
} from './ivf/train.js';
export { layoutIvf } from './ivf/assign.js';
export { IVF_DRIFT_THRESHOLD, driftOf } from './ivf/compact.js';
export type { IvfCompactOptions } from './ivf/compact.js';
export { DEFAULT_CACHE_BYTES } from './ivf/paged.js';
export type { IvfAppended } from './ivf/state.js';
export { ivfBytes, ivfFromBytes, writeIvfFile } from './ivf/bytes.js';
export { WasmScanner } from './ivf/wasm-scan.js';
export { quantizeTables } from './ivf/tables.js';
export { defaultScanThreads } from './ivf/scan-pool.js';
export { DEFAULT_MAX_PROBE, probeLimits } from './ivf/propose.js';
