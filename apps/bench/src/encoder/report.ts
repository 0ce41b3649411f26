/**
 * The report of `pnpm bench:encoder`: each peer and setting's fastest try, its agreement with
 * bfe, and bfe's speed ratios against the peers measured in the same run.
 */
import { cpus, totalmem } from 'node:os';
import type { ModelManifest } from '@bfe/models';
import { round } from '../shared/stats.js';
import { PEERS, type Cli } from './cli.js';
import type { Row } from './plan.js';
import type { Peer, PeerSuccess } from './protocol.js';

/** Other processes' mean busy cores above which a measurement counts as contended. */
export const CONTENDED_CORES = 0.2;

export interface Context {
  readonly modelDir: string;
  readonly manifest: ModelManifest;
  readonly texts: number;
  readonly tokens: number;
  readonly truncated: number;
  readonly tokenized: readonly { readonly truncated: boolean }[];
  readonly sample: readonly number[];
}

export interface RunReport {
  readonly peer: Peer;
  readonly setting: string;
  readonly ok: boolean;
  /** Fastest round's timed pass. */
  readonly seconds?: number;
  /** Every successful measurement's seconds (rounds and retries), in order. */
  readonly rounds?: readonly number[];
  readonly tokensPerSecond?: number;
  readonly textsPerSecond?: number;
  /** CPU seconds of the child (all threads) in the fastest round. */
  readonly cpuSeconds?: number;
  /** Mean cores other processes kept busy during the fastest round (contention). */
  readonly otherCores?: number | null;
  /** 1-minute load average at the end of the fastest round. */
  readonly load?: number;
  /** Largest peak RSS over the rounds. */
  readonly peakRssMb?: number;
  readonly baseRssMb?: number;
  readonly loadSeconds?: number;
  /** The peer's own token count, when it differs from the shared one. */
  readonly tokenMismatch?: number;
  readonly contentTokens?: number;
  /** Smallest cosine with bfe's pooled vectors (first bfe run) on the sampled texts. */
  readonly minCosineVsBfe?: { readonly full: number | null; readonly truncated: number | null };
  /** bfe runs: smallest cosine of any sampled content-token state with the first bfe run's. */
  readonly minTokenCosineVsBfe?: number | null;
  /** bfe runs: whether every pooled vector and token state equals the first bfe run's, bit for bit. */
  readonly identicalToBfe?: boolean;
  /** bfe runs: tokens/s over the first bfe run's, and over sentence-transformers' best batch size. */
  readonly speedVsBase?: number;
  readonly speedVsSentenceTransformers?: number | null;
  readonly versions?: Readonly<Record<string, string>>;
  readonly error?: string;
}

export interface Report {
  readonly bench: 'encoder';
  readonly dataset: string;
  readonly texts: number;
  readonly tokens: number;
  readonly truncated: number;
  readonly maxLength: number;
  readonly threads: number;
  readonly warmupTexts: number;
  readonly repeat: number;
  readonly model: { readonly dir: string; readonly sha256: string };
  readonly host: {
    readonly cpus: number;
    readonly cpu: string;
    readonly memoryGb: number;
    readonly node: string;
  };
  readonly runs: readonly RunReport[];
  /** bfe tokens/s over the peer's: `bfe/<peer>` against its best batch size, then each one. */
  readonly ratios: Readonly<Record<string, number | null>>;
  /** The bfe run the ratios use: the first bfe setting (the package defaults unless overridden). */
  readonly ratioBase: string | null;
  readonly bestBfe: string | null;
  readonly unavailable: readonly {
    readonly peer: Peer;
    readonly setting: string;
    readonly error: string;
  }[];
}

export function summarize(cli: Cli, ctx: Context, rows: readonly Row[]): Report {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = `${r.peer}\u0000${r.setting}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const reference = rows.find(
    (r): r is Row & { result: PeerSuccess } => r.peer === 'bfe' && r.result.ok,
  );
  const runs: RunReport[] = [...groups.values()].map((group) => {
    const { peer, setting } = group[0]!;
    const ok = group.map((r) => r.result).filter((r): r is PeerSuccess => r.ok);
    const failed = group.map((r) => r.result).find((r) => !r.ok);
    if (ok.length === 0) {
      return { peer, setting, ok: false, error: failed?.ok === false ? failed.error : 'no result' };
    }
    const okRows = group.filter((r) => r.result.ok);
    const fastestRow = okRows.reduce((a, b) =>
      (b.result as PeerSuccess).seconds < (a.result as PeerSuccess).seconds ? b : a,
    );
    const result = fastestRow.result as PeerSuccess;
    return {
      peer,
      setting,
      ok: true,
      seconds: round(result.seconds, 3),
      rounds: ok.map((r) => round(r.seconds, 2)),
      tokensPerSecond: Math.round(ctx.tokens / result.seconds),
      textsPerSecond: round(ctx.texts / result.seconds, 1),
      cpuSeconds: round(result.cpuSeconds, 2),
      ...(fastestRow.load === undefined ? {} : { load: round(fastestRow.load, 1) }),
      otherCores:
        result.otherCpuSeconds === null ? null : round(result.otherCpuSeconds / result.seconds, 2),
      peakRssMb: Math.round(Math.max(...ok.map((r) => r.peakRssMb))),
      baseRssMb: Math.round(result.baseRssMb),
      loadSeconds: round(result.loadSeconds, 2),
      ...(ok.every((r) => r.tokens === ctx.tokens) ? {} : { tokenMismatch: result.tokens }),
      ...(result.contentTokens === undefined ? {} : { contentTokens: result.contentTokens }),
      ...(reference === undefined
        ? {}
        : { minCosineVsBfe: agreement(ctx, reference.result, result) }),
      ...(reference === undefined || peer !== 'bfe'
        ? {}
        : {
            minTokenCosineVsBfe: tokenAgreement(reference.result, result),
            identicalToBfe:
              result.digest !== undefined && result.digest === reference.result.digest,
          }),
      versions: result.versions,
      ...(failed?.ok === false ? { error: `a round failed: ${failed.error}` } : {}),
    };
  });
  const best = (peer: Peer): RunReport | undefined =>
    runs
      .filter((r) => r.peer === peer && r.ok)
      .sort((a, b) => b.tokensPerSecond! - a.tokensPerSecond!)[0];
  const base = runs.find((r) => r.peer === 'bfe' && r.ok);
  const ratios: Record<string, number | null> = {};
  for (const peer of PEERS.slice(1)) {
    const p = best(peer);
    ratios[`bfe/${peer}`] =
      base === undefined || p === undefined
        ? null
        : round(base.tokensPerSecond! / p.tokensPerSecond!, 3);
    for (const r of runs.filter((x) => x.peer === peer && x.ok)) {
      ratios[`bfe/${peer} ${r.setting}`] =
        base === undefined ? null : round(base.tokensPerSecond! / r.tokensPerSecond!, 3);
    }
  }
  const st = best('sentence-transformers');
  const withSpeeds = runs.map((r): RunReport => {
    if (r.peer !== 'bfe' || !r.ok || base === undefined) return r;
    return {
      ...r,
      speedVsBase: round(r.tokensPerSecond! / base.tokensPerSecond!, 3),
      speedVsSentenceTransformers:
        st === undefined ? null : round(r.tokensPerSecond! / st.tokensPerSecond!, 3),
    };
  });
  const fastest = best('bfe');
  const cpuList = cpus();
  return {
    bench: 'encoder',
    dataset: cli.dataset,
    texts: ctx.texts,
    tokens: ctx.tokens,
    truncated: ctx.truncated,
    maxLength: cli.maxLength,
    threads: cli.threads,
    warmupTexts: cli.warmup,
    repeat: cli.repeat,
    model: { dir: ctx.modelDir, sha256: ctx.manifest.modelSha256 },
    host: {
      cpus: cpuList.length,
      cpu: cpuList[0]?.model ?? 'unknown',
      memoryGb: round(totalmem() / 2 ** 30, 1),
      node: process.version,
    },
    runs: withSpeeds,
    ratios,
    ratioBase: base === undefined ? null : `bfe ${base.setting}`,
    bestBfe: fastest === undefined ? null : fastest.setting,
    unavailable: runs
      .filter((r) => r.error !== undefined)
      .map((r) => ({ peer: r.peer, setting: r.setting, error: r.error ?? '' })),
  };
}

/** Smallest cosine of a sampled content-token state with the reference bfe run's. */
function tokenAgreement(bfe: PeerSuccess, run: PeerSuccess): number | null {
  let min: number | null = null;
  const dim = bfe.sample.find((s) => s.length > 0)?.length ?? 0;
  if (dim === 0) return null;
  for (let k = 0; k < bfe.sample.length; k++) {
    const a = bfe.sampleTokens?.[k];
    const b = run.sampleTokens?.[k];
    if (a === undefined || b === undefined || a.length !== b.length) return null;
    for (let t = 0; t < a.length; t += dim) {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let j = t; j < t + dim; j++) {
        dot += a[j]! * b[j]!;
        na += a[j]! * a[j]!;
        nb += b[j]! * b[j]!;
      }
      const cos = dot / Math.sqrt(na * nb);
      min = min === null ? cos : Math.min(min, cos);
    }
  }
  return min === null ? null : round(min, 7);
}

/** Smallest cosine with bfe's pooled vector, over the sampled texts kept whole and truncated. */
function agreement(
  ctx: Context,
  bfe: PeerSuccess,
  peer: PeerSuccess,
): { full: number | null; truncated: number | null } {
  let full: number | null = null;
  let cut: number | null = null;
  for (let k = 0; k < ctx.sample.length; k++) {
    const a = bfe.sample[k];
    const b = peer.sample[k];
    if (a === undefined || b === undefined || a.length === 0 || a.length !== b.length) continue;
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let j = 0; j < a.length; j++) {
      dot += a[j]! * b[j]!;
      na += a[j]! * a[j]!;
      nb += b[j]! * b[j]!;
    }
    const cos = round(dot / Math.sqrt(na * nb), 6);
    if (ctx.tokenized[ctx.sample[k]!]!.truncated) cut = cut === null ? cos : Math.min(cut, cos);
    else full = full === null ? cos : Math.min(full, cos);
  }
  return { full, truncated: cut };
}
