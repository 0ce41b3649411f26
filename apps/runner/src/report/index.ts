export { loadVegaBundles } from './bundles.js';
export type { VegaBundles } from './bundles.js';
export {
  adapterChart,
  deltaChart,
  headlineChart,
  kSweepChart,
  metricLabel,
  subtaskChart,
} from './charts.js';
export { diagnosticBanner, inlineScript, renderReport, scriptJson } from './render.js';
export type { RenderOptions, RenderedReport } from './render.js';
export {
  DEFAULT_BASELINE,
  HEADLINE_METRICS,
  adapterTrainingSchema,
  kSweepPointSchema,
  receiptSummarySchema,
  reportInputSchema,
  reportSplitSchema,
} from './schema.js';
export type {
  AdapterTraining,
  KSweepPoint,
  ReceiptSummary,
  ReportInput,
  ReportSplit,
} from './schema.js';
export { writeReport } from './write.js';
export type { WrittenReport } from './write.js';
