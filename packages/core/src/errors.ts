/**
 * Errors a user can cause: each has a stable `code`, a precise message and, where it helps,
 * a `suggestion`. The CLI's one `handleError` maps them to exit codes; programmer errors stay
 * plain `Error`s.
 */
export type BfeErrorCode =
  | 'CONFIG_INVALID'
  | 'DATA_INVALID'
  | 'DATA_MISSING'
  | 'DATA_HASH_MISMATCH'
  | 'DATA_FETCH_FAILED'
  | 'DATASET_UNKNOWN'
  | 'SPLIT_IMPOSSIBLE'
  | 'SPLIT_INVALID'
  | 'LABEL_LEAK'
  | 'ARTIFACT_CORRUPT'
  | 'DATASET_EMPTY'
  | 'STORE_LOCKED'
  | 'STORAGE_FULL'
  | 'STORAGE_DENIED'
  | 'STORAGE_IO';

export interface BfeErrorOptions {
  suggestion?: string;
  cause?: unknown;
}

/** Base class of every user-facing bfe error. */
export class BfeError extends Error {
  readonly code: BfeErrorCode;
  readonly suggestion: string | undefined;

  constructor(code: BfeErrorCode, message: string, options: BfeErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.suggestion = options.suggestion;
  }
}

/** A config file or CLI option failed validation; `message` carries the zod path. */
export class ConfigError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('CONFIG_INVALID', message, options);
  }
}

/** A dataset file could not be read as the format it claims to be. */
export class DataError extends BfeError {
  readonly file: string | undefined;
  constructor(message: string, options: BfeErrorOptions & { file?: string } = {}) {
    super('DATA_INVALID', message, options);
    this.file = options.file;
  }
}

/** A dataset file is not on disk (nor in the mirror). */
export class DataMissingError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('DATA_MISSING', message, options);
  }
}

/** A fetched or mirrored file does not have its pinned SHA-256. */
export class HashMismatchError extends BfeError {
  constructor(
    readonly file: string,
    readonly expected: string,
    readonly actual: string,
  ) {
    super(
      'DATA_HASH_MISMATCH',
      `${file}: SHA-256 ${actual} does not match the pinned ${expected}`,
      {
        suggestion:
          'The file is corrupt, truncated or a different version; remove it and fetch again.',
      },
    );
  }
}

/** No source could deliver a dataset file. */
export class FetchError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('DATA_FETCH_FAILED', message, options);
  }
}

/** The dataset name is not registered and is not an `lmeb:<folder>` reference. */
export class UnknownDatasetError extends BfeError {
  constructor(name: string, known: readonly string[]) {
    super('DATASET_UNKNOWN', `Unknown dataset '${name}'.`, {
      suggestion: `Known datasets: ${known.join(', ')}, or lmeb:<folder> for an LMEB-format task.`,
    });
  }
}

/** The requested split cannot be made under the requested policy. */
export class SplitError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('SPLIT_IMPOSSIBLE', message, options);
  }
}

/** Labels would reach a stage that must never see them (METHOD.md §4, §5). */
export class LabelLeakError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('LABEL_LEAK', message, options);
  }
}

/** An artifact on disk is truncated, corrupted or not what its manifest says. */
export class ArtifactCorruptError extends BfeError {
  constructor(message: string, options: BfeErrorOptions = {}) {
    super('ARTIFACT_CORRUPT', message, options);
  }
}

/**
 * Loading left nothing to evaluate: no memories or no queries survived. Names the files read
 * and what the load report dropped, so the cause is visible (not a later SPLIT_IMPOSSIBLE).
 */
export class EmptyDatasetError extends BfeError {
  readonly files: readonly string[];
  constructor(message: string, options: BfeErrorOptions & { files?: readonly string[] } = {}) {
    super('DATASET_EMPTY', message, options);
    this.files = options.files ?? [];
  }
}
