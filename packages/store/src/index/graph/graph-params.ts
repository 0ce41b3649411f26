import type { HnswParams, HnswScalarKind } from '@bfe/index';

/** The settings a graph is built with (its file is refused under others). */
export interface GraphParams extends HnswParams {
  readonly kind: HnswScalarKind;
  /** usearch threads for adds and searches. */
  readonly threads: number;
}
