import { z } from 'zod';

/** The token-state codecs (METHOD.md §8, "Compressed and approximate token search"). */
export const codecNameSchema = z.enum(['fp32', 'fp16', 'sq8', 'sq4', 'rp128+sq4']);
export type CodecName = z.infer<typeof codecNameSchema>;

/** Dims kept by the `rp128+sq4` projection. */
export const PROJECTED_DIM = 128;

const scalarParamsSchema = z.strictObject({
  range: z.enum(['minmax', 'quantile']),
  /** `quantile`: the seed of the hash order the fit's token sample was drawn in. */
  sampleSeed: z.number().int().min(0).max(0xffff_ffff).optional(),
  lo: z.array(z.number()),
  step: z.array(z.number().nonnegative()),
});

/**
 * `params` of `sq8` / `sq4`: the fitted range, the sample seed of a quantile fit, and the
 * per-dimension `lo` / `step`.
 */
export type ScalarParams = z.infer<typeof scalarParamsSchema>;

const projectedParamsSchema = scalarParamsSchema.extend({
  seed: z.number().int().min(0).max(0xffff_ffff),
});

/** `params` of `rp128+sq4`: the projection seed and the SQ4 levels in the projected space. */
export type ProjectedParams = z.infer<typeof projectedParamsSchema>;

/**
 * A trained codec, JSON-serialisable; `parse` it when reading one from disk. `bytesPerToken` and
 * `codeDim` are checked against `name` and `dim`, and the per-dimension arrays against
 * `codeDim`, so a model file that does not fit its codec is refused at the boundary.
 */
export const codecModelSchema = z
  .strictObject({
    name: codecNameSchema,
    dim: z.number().int().positive(),
    codeDim: z.number().int().positive(),
    bytesPerToken: z.number().int().positive(),
    params: z.record(z.string(), z.unknown()),
  })
  .superRefine((m, ctx) => {
    const expected = codecShape(m.name, m.dim);
    if (m.codeDim !== expected.codeDim || m.bytesPerToken !== expected.bytesPerToken) {
      ctx.addIssue({
        code: 'custom',
        message: `${m.name} at dim ${m.dim} has codeDim ${expected.codeDim} and ${expected.bytesPerToken} bytes per token, got ${m.codeDim} and ${m.bytesPerToken}.`,
      });
      return;
    }
    const schema = paramsSchema(m.name);
    const parsed = schema.safeParse(m.params);
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: `params: ${z.prettifyError(parsed.error)}` });
      return;
    }
    const { lo, step } = parsed.data as { lo?: unknown[]; step?: unknown[] };
    if (lo !== undefined && step !== undefined) {
      if (lo.length !== m.codeDim || step.length !== m.codeDim) {
        ctx.addIssue({ code: 'custom', message: `params.lo/step must have ${m.codeDim} entries.` });
      }
    }
  });

export interface CodecModel {
  readonly name: CodecName;
  /** Input dim (384 for MiniLM). */
  readonly dim: number;
  /** Dim of decoded vectors: `dim`, or 128 for `rp128+sq4`. */
  readonly codeDim: number;
  /** Code bytes per token (fp32 1536, fp16 768, sq8 384, sq4 192, rp128+sq4 64 at dim 384). */
  readonly bytesPerToken: number;
  readonly params: Record<string, unknown>;
}

/** The params schema of one codec. */
export function paramsSchema(name: CodecName): z.ZodType<Record<string, unknown>> {
  switch (name) {
    case 'fp32':
    case 'fp16':
      return z.strictObject({});
    case 'sq8':
    case 'sq4':
      return scalarParamsSchema;
    case 'rp128+sq4':
      return projectedParamsSchema;
  }
}

/**
 * Code dim and bytes per token of a codec at input dim `dim`.
 *
 * @example
 * codecShape('sq4', 384); // { codeDim: 384, bytesPerToken: 192 }
 */
export function codecShape(
  name: CodecName,
  dim: number,
): { codeDim: number; bytesPerToken: number } {
  switch (name) {
    case 'fp32':
      return { codeDim: dim, bytesPerToken: 4 * dim };
    case 'fp16':
      return { codeDim: dim, bytesPerToken: 2 * dim };
    case 'sq8':
      return { codeDim: dim, bytesPerToken: dim };
    case 'sq4':
      return { codeDim: dim, bytesPerToken: Math.ceil(dim / 2) };
    case 'rp128+sq4':
      return { codeDim: PROJECTED_DIM, bytesPerToken: PROJECTED_DIM / 2 };
  }
}
