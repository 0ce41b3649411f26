import { z } from 'zod';

/**
 * The experiment's `dataset` section (the dataset stage): the dataset and its loader's options,
 * checked against the dataset's own schema before any stage runs (`checkExperimentRefs`).
 */
export const datasetSectionSchema = z.strictObject({
  /** A registered dataset (`bfe data list`) or `lmeb:<folder>` (relative to the file). */
  name: z.string().min(1),
  /** The loader's options, as `bfe data inspect --set key=value` takes them. */
  options: z.record(z.string(), z.unknown()).default({}),
});
