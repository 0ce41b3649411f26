/**
 * The training input (METHOD.md §4): its types, and the checks that run before any arithmetic
 * — only train and validation keys (test labels have no way in), shapes, finiteness,
 * positives, the split's guard rails. (Package-internal apart from the exported types.)
 */
import { ConfigError, LabelLeakError } from '@bfe/core';
import { AdapterInputError } from './errors.js';
import { assertTrainable } from './guards.js';
import type { LossQuery, TokenSegments } from './loss/loss.js';
import type { ResolvedTrainOptions } from './options.js';

/** A query's candidate memories: ids, and their token states concatenated. */
export interface CandidateSet extends TokenSegments {
  /** One id per candidate memory, in `memoryOffsets` order. */
  readonly memoryIds: readonly string[];
  /** Content-token states, unit rows, `[N × dim]`. */
  readonly tokenVectors: Float32Array;
}

/** One labelled query of the train or validation split. */
export interface TrainingQuery {
  readonly queryId: string;
  /** Content-token states of the query, `[n_q × dim]` (`n_q = tokens.length / dim`). */
  readonly tokens: Float32Array;
  /** Its candidate bank; queries of one bank may share one object (it is checked once). */
  readonly candidates: CandidateSet;
  /** Indices (into `candidates.memoryIds`) of the relevant memories. */
  readonly positives: readonly number[];
}

/**
 * What training sees: the train and validation queries. There is deliberately no field for
 * test queries; an object with any other key is refused at runtime as well.
 */
export interface TrainingInput {
  readonly dim: number;
  readonly train: readonly TrainingQuery[];
  readonly validation: readonly TrainingQuery[];
}

/** Queries that were left out, by id; nothing is dropped without being listed here. */
export interface TrainingReport {
  /** Train queries used / given. */
  readonly trainQueries: number;
  readonly trainGiven: number;
  /** Validation queries used for the validation loss / given. */
  readonly validationQueries: number;
  readonly validationGiven: number;
  /** Train queries without content tokens (no MaxSim term to learn from): skipped. */
  readonly trainNoTokens: readonly string[];
  /** Validation queries without content tokens: not in the validation loss. */
  readonly validationNoTokens: readonly string[];
  /** Validation queries without a relevant memory (METHOD.md §6 drops these): not in the loss. */
  readonly validationNoPositive: readonly string[];
  readonly stepsPerEpoch: number;
}

const INPUT_KEYS = new Set(['dim', 'train', 'validation']);

/** A checked query, ready for the loss. */
export interface PreparedQuery extends LossQuery {
  readonly queryId: string;
  readonly tokens: Float32Array;
  readonly candidates: CandidateSet;
}

/**
 * Checks the input and keeps the queries that can take part (train: with tokens; validation:
 * with tokens and a positive), listing every one left out in the report.
 */
export function prepareInput(
  input: TrainingInput,
  config: ResolvedTrainOptions,
): { train: PreparedQuery[]; validation: PreparedQuery[]; report: TrainingReport } {
  if (typeof input !== 'object' || input === null) {
    throw new ConfigError('trainAdapter: the input must be { dim, train, validation }.');
  }
  const extra = Object.keys(input).filter((key) => !INPUT_KEYS.has(key));
  if (extra.length > 0) {
    throw new LabelLeakError(
      `The training input has key(s) ${extra.map((k) => `'${k}'`).join(', ')}; only dim, train ` +
        'and validation are accepted, so that no test query or label can reach training.',
    );
  }
  const { dim } = input;
  if (!Number.isInteger(dim) || dim < 1) {
    throw new ConfigError(`trainAdapter: dim must be a positive integer, got ${String(dim)}.`);
  }
  if (!Array.isArray(input.train) || !Array.isArray(input.validation)) {
    throw new ConfigError('trainAdapter: train and validation must be arrays of queries.');
  }
  const memoryIds = (queries: readonly TrainingQuery[]): string[] => {
    const ids = new Set<string>();
    for (const q of queries) for (const id of q.candidates.memoryIds) ids.add(id);
    return [...ids];
  };
  assertTrainable({
    policy: config.policy,
    queryIds: {
      train: input.train.map((q) => q.queryId),
      validation: input.validation.map((q) => q.queryId),
    },
    memoryIds: { train: memoryIds(input.train), validation: memoryIds(input.validation) },
  });

  const checked = new WeakSet<CandidateSet>();
  const seen = new Set<string>();
  const trainNoTokens: string[] = [];
  const validationNoTokens: string[] = [];
  const validationNoPositive: string[] = [];
  const prepare = (split: 'train' | 'validation', queries: readonly TrainingQuery[]) => {
    const out: PreparedQuery[] = [];
    for (const q of queries) {
      const id = q.queryId;
      if (seen.has(id)) {
        throw new AdapterInputError(
          'duplicate-query',
          `Query '${id}' is listed twice in ${split}.`,
        );
      }
      seen.add(id);
      if (!checked.has(q.candidates)) {
        checkCandidates(q.candidates, dim, id);
        checked.add(q.candidates);
      }
      const memories = q.candidates.memoryIds.length;
      checkPositives(q.positives, memories, id);
      if (!(q.tokens instanceof Float32Array) || q.tokens.length % dim !== 0) {
        throw new AdapterInputError(
          'bad-shape',
          `Query '${id}': tokens must be a Float32Array of rows × ${dim} values.`,
        );
      }
      checkFinite(q.tokens, `query '${id}' tokens`);
      const rows = q.tokens.length / dim;
      if (rows === 0) {
        (split === 'train' ? trainNoTokens : validationNoTokens).push(id);
        continue;
      }
      if (q.positives.length === 0) {
        if (split === 'validation') {
          validationNoPositive.push(id);
          continue;
        }
        throw new AdapterInputError(
          'no-positive',
          `Train query '${id}' has no relevant memory among its ${memories} candidates; its ` +
            'loss is undefined.',
          { suggestion: 'Drop queries without relevant memories before training.' },
        );
      }
      out.push({
        queryId: id,
        tokens: q.tokens,
        rows,
        candidates: q.candidates,
        positives: q.positives,
      });
    }
    return out;
  };
  const train = prepare('train', input.train);
  const validation = prepare('validation', input.validation);
  if (train.length === 0) {
    throw new ConfigError(
      `None of the ${input.train.length} train queries has content tokens; nothing to train on.`,
    );
  }
  if (validation.length === 0 && config.validationLoss) {
    throw new ConfigError(
      `None of the ${input.validation.length} validation queries has both content tokens and a ` +
        'relevant memory; the adapter could not be selected on validation.',
    );
  }
  return {
    train,
    validation,
    report: {
      trainQueries: train.length,
      trainGiven: input.train.length,
      validationQueries: validation.length,
      validationGiven: input.validation.length,
      trainNoTokens,
      validationNoTokens,
      validationNoPositive,
      stepsPerEpoch: Math.ceil(train.length / config.batchSize),
    },
  };
}

function checkCandidates(c: CandidateSet, dim: number, queryId: string): void {
  const where = `Query '${queryId}' candidates`;
  const offsets = c.memoryOffsets;
  const memories = c.memoryIds.length;
  if (!(c.tokenVectors instanceof Float32Array)) {
    throw new AdapterInputError('bad-shape', `${where}: tokenVectors must be a Float32Array.`);
  }
  if (memories === 0) throw new AdapterInputError('bad-shape', `${where}: no candidate memory.`);
  if (offsets.length !== memories + 1 || offsets[0] !== 0) {
    throw new AdapterInputError(
      'bad-shape',
      `${where}: memoryOffsets must hold ${memories + 1} values starting at 0 ` +
        `(one more than memoryIds), got ${offsets.length} starting at ${offsets[0]}.`,
    );
  }
  for (let m = 0; m < memories; m++) {
    const a = offsets[m]!;
    const b = offsets[m + 1]!;
    if (!Number.isInteger(b) || b < a) {
      throw new AdapterInputError(
        'bad-shape',
        `${where}: memoryOffsets must be non-decreasing integers (memory ${m}: ${a} → ${b}).`,
      );
    }
  }
  if (offsets[memories]! * dim !== c.tokenVectors.length) {
    throw new AdapterInputError(
      'bad-shape',
      `${where}: ${offsets[memories]} tokens × ${dim} ≠ ${c.tokenVectors.length} values.`,
    );
  }
  checkFinite(c.tokenVectors, `${where} tokenVectors`);
}

function checkPositives(positives: readonly number[], memories: number, queryId: string): void {
  const seen = new Set<number>();
  for (const p of positives) {
    if (!Number.isInteger(p) || p < 0 || p >= memories || seen.has(p)) {
      throw new AdapterInputError(
        'bad-positive',
        `Query '${queryId}': positive ${p} is out of [0, ${memories}) or repeated.`,
      );
    }
    seen.add(p);
  }
}

function checkFinite(values: Float32Array, what: string): void {
  for (let i = 0; i < values.length; i++) {
    if (!Number.isFinite(values[i]!)) {
      throw new AdapterInputError('non-finite', `${what}: value ${i} is ${values[i]}.`);
    }
  }
}
