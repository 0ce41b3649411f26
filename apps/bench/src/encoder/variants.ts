/**
 * bfe variants of `pnpm bench:encoder --bfe-variants`: each variant is a `+`-joined list of
 * options on top of the package defaults, e.g. `prealloc+overlap`, `opt=basic`, `inter=2`,
 * `model=/dir/of/int8`. `default` is the package defaults alone.
 */
import type { GraphOptimizationLevel } from '@bfe/encoder';

/** What one variant changes; unset fields keep the package defaults. */
export interface BfeVariant {
  readonly interOpThreads?: number;
  readonly graphOptimizationLevel?: GraphOptimizationLevel;
  /** Open once at level `all` saving the optimised graph, then time a session on the saved file at level `disabled`. */
  readonly savedOptimized?: boolean;
  /** Time the onnxruntime session alone on the pass's batches (graph-only.ts); no outputs kept. */
  readonly graphOnly?: boolean;
  readonly spinning?: boolean;
  readonly preallocate?: boolean;
  readonly overlapTokenization?: boolean;
  /** Another model directory (with its bfe-model.json), e.g. an int8 export. */
  readonly modelDir?: string;
}

const LEVELS: readonly GraphOptimizationLevel[] = ['disabled', 'basic', 'extended', 'all'];

export const VARIANT_HELP =
  'default | inter=N | opt=disabled|basic|extended|all | saved-opt | graph-only | spin=0|1 | prealloc=0|1 | overlap=0|1 | model=DIR, joined by +';

/** Parses one variant spec; throws on an unknown option. */
export function parseVariant(spec: string): BfeVariant {
  const out: Record<string, unknown> = {};
  for (const part of spec.split('+').map((s) => s.trim())) {
    if (part === '' || part === 'default') continue;
    const eq = part.indexOf('=');
    const key = eq < 0 ? part : part.slice(0, eq);
    const value = eq < 0 ? '' : part.slice(eq + 1);
    const int = (): number => {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0)
        throw new Error(`--bfe-variants: ${part}: not a positive integer`);
      return n;
    };
    const flag = (): boolean => {
      if (value !== '0' && value !== '1')
        throw new Error(`--bfe-variants: ${part}: expected 0 or 1`);
      return value === '1';
    };
    switch (key) {
      case 'inter':
        out.interOpThreads = int();
        break;
      case 'opt':
        if (!(LEVELS as readonly string[]).includes(value))
          throw new Error(`--bfe-variants: ${part}: level is one of ${LEVELS.join(', ')}`);
        out.graphOptimizationLevel = value;
        break;
      case 'saved-opt':
        out.savedOptimized = true;
        break;
      case 'graph-only':
        out.graphOnly = true;
        break;
      case 'spin':
        out.spinning = flag();
        break;
      case 'prealloc':
        out.preallocate = flag();
        break;
      case 'overlap':
        out.overlapTokenization = flag();
        break;
      case 'model':
        if (value === '') throw new Error(`--bfe-variants: ${part}: a directory is needed`);
        out.modelDir = value;
        break;
      default:
        throw new Error(`--bfe-variants: unknown option '${key}' (${VARIANT_HELP})`);
    }
  }
  return out as BfeVariant;
}
