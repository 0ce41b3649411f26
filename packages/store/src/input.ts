import { z } from 'zod';
import { DataError, decodeUtf8Strict } from '@bfe/core';
import type { MemoryMeta } from './types.js';

/** A bank name: one safe path-free token, 1–128 characters, starting with a letter or digit. */
export const BANK_NAME = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/;

/** Default cap on a memory's text, in UTF-8 bytes (predeclared: 64 KiB). */
export const DEFAULT_MAX_TEXT_BYTES = 64 * 1024;
/** Cap on a memory's metadata, as JSON bytes. */
export const MAX_META_BYTES = 64 * 1024;
const MAX_ID_LENGTH = 512;

/** One memory as a caller gives it. `text` may be UTF-8 bytes, decoded strictly. */
export interface MemoryInput {
  readonly id: string;
  readonly bank: string;
  readonly text: string | Uint8Array;
  readonly meta?: MemoryMeta;
}

/** A validated memory: text decoded and checked. */
export interface ValidMemory {
  readonly id: string;
  readonly bank: string;
  readonly text: string;
  readonly meta: MemoryMeta | undefined;
}

/** Input the store refuses (the store is unchanged): names every offending item. */
export class MemoryInputError extends DataError {
  constructor(readonly issues: readonly string[]) {
    super(`invalid memories: ${issues.join('; ')}`, {
      suggestion:
        'Give each memory a non-empty id, a bank name of letters, digits and . _ : @ -, non-empty well-formed text within the size limit, and JSON metadata.',
    });
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const wellFormed = (s: string): boolean => !LONE_SURROGATE.test(s);

/** zod schema of a bank name (see {@link BANK_NAME}). */
export const bankNameSchema = z
  .string()
  .regex(BANK_NAME, 'a bank name is 1-128 letters, digits or . _ : @ -, starting alphanumeric');

const memorySchema = z.strictObject({
  id: z
    .string()
    .min(1, 'empty id')
    .max(MAX_ID_LENGTH, `id longer than ${MAX_ID_LENGTH}`)
    .refine(wellFormed, 'id is not well-formed Unicode'),
  bank: bankNameSchema,
  text: z.union([z.string(), z.instanceof(Uint8Array)]),
  meta: z
    .record(z.string(), z.json())
    .refine(
      (m) => Buffer.byteLength(JSON.stringify(m)) <= MAX_META_BYTES,
      `meta over ${MAX_META_BYTES} bytes of JSON`,
    )
    .optional(),
});

/**
 * Validates one call's memories: each item's fields, the text (decoded strictly from bytes,
 * well-formed, not blank, at most `maxTextBytes` UTF-8 bytes), and no id twice in one bank.
 * @throws MemoryInputError listing every problem by item index
 */
export function validateMemories(items: unknown, maxTextBytes: number): ValidMemory[] {
  if (!Array.isArray(items) || items.length === 0)
    throw new MemoryInputError(['expected a non-empty array of memories']);
  const issues: string[] = [];
  const out: ValidMemory[] = [];
  const seen = new Set<string>();
  items.forEach((raw, i) => {
    const parsed = memorySchema.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues)
        issues.push(
          `[${i}]${issue.path.length > 0 ? `.${issue.path.join('.')}` : ''}: ${issue.message}`,
        );
      return;
    }
    const m = parsed.data;
    let text: string;
    if (typeof m.text === 'string') {
      text = m.text;
      if (!wellFormed(text)) {
        issues.push(`[${i}].text: not well-formed Unicode (a lone surrogate)`);
        return;
      }
    } else {
      try {
        text = decodeUtf8Strict(m.text, `memory [${i}] text`);
      } catch (error) {
        issues.push(`[${i}].text: ${(error as Error).message}`);
        return;
      }
    }
    const bytes = Buffer.byteLength(text);
    if (text.trim().length === 0) issues.push(`[${i}].text: empty`);
    else if (bytes > maxTextBytes)
      issues.push(`[${i}].text: ${bytes} bytes, over the limit of ${maxTextBytes}`);
    const key = `${m.bank}\u0000${m.id}`;
    if (seen.has(key)) issues.push(`[${i}]: id '${m.id}' appears twice in bank '${m.bank}'`);
    seen.add(key);
    out.push({ id: m.id, bank: m.bank, text, meta: m.meta as MemoryMeta | undefined });
  });
  if (issues.length > 0) throw new MemoryInputError(issues);
  return out;
}

/**
 * Validates a bank name and a list of ids (for `delete`).
 * @throws MemoryInputError when the bank name or an id is invalid, or the list is empty
 */
export function validateIds(ids: unknown, bank: unknown): { ids: string[]; bank: string } {
  const parsed = z
    .strictObject({
      bank: bankNameSchema,
      ids: z.array(z.string().min(1).max(MAX_ID_LENGTH)).min(1, 'no ids given'),
    })
    .safeParse({ ids, bank });
  if (!parsed.success)
    throw new MemoryInputError(
      parsed.error.issues.map((i) => `${i.path.join('.') || 'input'}: ${i.message}`),
    );
  return { ids: [...new Set(parsed.data.ids)], bank: parsed.data.bank };
}
