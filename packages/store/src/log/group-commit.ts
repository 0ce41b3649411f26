import { MemoryInputError, type ValidMemory } from '../input.js';
import type { EncodedTexts } from '../types.js';
import type { WalRecord } from './wal.js';

// Group commit: the write calls that arrive while one WAL fsync is under way wait together and
// share the next one. Each call is still its own WAL record (its own frame and CRC: atomic on
// its own), checked against the live memories and the calls planned before it in the group,
// and acknowledged only once the group's fsync returned.

/** A write call waiting for its turn. */
export type CommitRequest =
  | {
      readonly kind: 'add';
      readonly memories: readonly ValidMemory[];
      readonly encoded: EncodedTexts;
      readonly update: boolean;
      readonly resolve: (value: DeleteOutcome | undefined) => void;
      readonly reject: (error: unknown) => void;
    }
  | {
      readonly kind: 'delete';
      readonly bank: string;
      readonly ids: readonly string[];
      readonly resolve: (value: DeleteOutcome | undefined) => void;
      readonly reject: (error: unknown) => void;
    };

/** What a delete call returns. */
export interface DeleteOutcome {
  readonly deleted: string[];
  readonly unknown: string[];
}

/** A call of a group with the record it writes (none: a delete of nothing). */
export interface PlannedCommit {
  readonly request: CommitRequest;
  readonly record: WalRecord | undefined;
  readonly outcome: DeleteOutcome | undefined;
}

/** Counters of the writer's commits. */
export interface CommitStats {
  /** Write calls that wrote a WAL record. */
  readonly records: number;
  /** WAL fsyncs (groups) that acknowledged them. */
  readonly syncs: number;
  /** The most records one fsync acknowledged. */
  readonly largestGroup: number;
}

/**
 * Plans one group in arrival order: sequence numbers from `nextSeq` on, each call checked
 * against `exists` (the live memories) as the calls before it in the group leave them. A call
 * that fails its check is rejected at once with a {@link MemoryInputError}; the others go on.
 */
export function planGroup(
  requests: readonly CommitRequest[],
  nextSeq: number,
  exists: (bank: string, id: string) => boolean,
): PlannedCommit[] {
  const overlay = new Map<string, boolean>();
  const key = (bank: string, id: string): string => `${bank}\u0000${id}`;
  const holds = (bank: string, id: string): boolean =>
    overlay.get(key(bank, id)) ?? exists(bank, id);
  const planned: PlannedCommit[] = [];
  let seq = nextSeq;
  for (const request of requests) {
    if (request.kind === 'delete') {
      const { bank, ids } = request;
      const deleted = ids.filter((id) => holds(bank, id));
      const unknown = ids.filter((id) => !holds(bank, id));
      const outcome = { deleted, unknown };
      if (deleted.length === 0) {
        planned.push({ request, record: undefined, outcome });
        continue;
      }
      planned.push({ request, record: { kind: 'delete', seq, bank, ids: deleted }, outcome });
      for (const id of deleted) overlay.set(key(bank, id), false);
      seq += 1;
      continue;
    }
    const { memories, update } = request;
    const issues: string[] = [];
    memories.forEach((m, i) => {
      const present = holds(m.bank, m.id);
      if (present && !update)
        issues.push(`[${i}]: id '${m.id}' already exists in bank '${m.bank}' (use update)`);
      if (!present && update)
        issues.push(`[${i}]: id '${m.id}' does not exist in bank '${m.bank}'`);
    });
    if (issues.length > 0) {
      request.reject(new MemoryInputError(issues));
      continue;
    }
    const record: WalRecord = {
      kind: 'add',
      seq,
      banks: memories.map((m) => m.bank),
      update,
      ids: memories.map((m) => m.id),
      texts: memories.map((m) => m.text),
      metas: memories.map((m) => m.meta),
      encoded: request.encoded,
    };
    planned.push({ request, record, outcome: undefined });
    for (const m of memories) overlay.set(key(m.bank, m.id), true);
    seq += memories.length;
  }
  return planned;
}
