/** The human table of `pnpm bench:encoder` (the JSON line follows it). */
import { out, printTable, type Align } from '../shared/table.js';
import { CONTENDED_CORES, type Report } from './report.js';

export function printReport(r: Report): void {
  out();
  out(
    `encoder benchmark: ${r.dataset}, ${r.texts} texts, ${r.tokens} tokens (specials included, max length ${r.maxLength}, ${r.truncated} truncated), ${r.threads} threads, ${r.host.cpus}× ${r.host.cpu}, node ${r.host.node}`,
  );
  const multi = r.runs.some((x) => (x.rounds?.length ?? 0) > 1);
  const head = [
    'encoder',
    'setting',
    'seconds',
    'tokens/s',
    'texts/s',
    'CPU s',
    'others',
    'peak RSS MB',
    'load s',
    'cos vs bfe',
    ...(multi ? ['all tries s'] : []),
  ];
  const rows = r.runs.map((x) =>
    x.ok
      ? [
          x.peer,
          x.setting,
          x.seconds!.toFixed(2),
          fmtInt(x.tokensPerSecond!),
          x.textsPerSecond!.toFixed(0),
          x.cpuSeconds!.toFixed(1),
          x.otherCores === null || x.otherCores === undefined ? '?' : x.otherCores.toFixed(2),
          String(x.peakRssMb),
          x.loadSeconds!.toFixed(2),
          x.minCosineVsBfe === undefined ? '' : fmtCos(x.minCosineVsBfe),
          ...(multi ? [x.rounds!.map((v) => v.toFixed(1)).join(' ')] : []),
        ]
      : [x.peer, x.setting, 'UNAVAILABLE', ...head.slice(3).map(() => '')],
  );
  // Peer and setting on the left, numbers on the right, the last (free-text) column on the left.
  const align = head.map((_, i): Align => (i < 2 || i === head.length - 1 ? 'left' : 'right'));
  printTable({ head, align, rows });
  out(
    "seconds: the timed pass after a warm-up, excluding model load; CPU s: the child's CPU time in it (all threads);",
  );
  out(
    'others: mean cores other processes kept busy meanwhile (contention; 0 on a quiet machine); cos vs bfe: min over sampled texts, whole / truncated.',
  );
  out();
  for (const [name, value] of Object.entries(r.ratios)) {
    if (name.includes(' ')) continue;
    out(
      value === null
        ? `${name}: n/a (a side is unavailable)`
        : `${name}: ${value.toFixed(2)}× (tokens/s of ${r.ratioBase ?? 'bfe'} over the peer's best batch size)`,
    );
  }
  const bfeRuns = r.runs.filter((x) => x.peer === 'bfe' && x.ok);
  if (bfeRuns.length > 1) {
    out();
    printTable({
      head: [
        'bfe setting',
        '× first bfe',
        '× sentence-transformers',
        'CPU s',
        'load',
        'bit-identical',
        'min cos pooled',
        'min cos tokens',
      ],
      align: ['left', 'right', 'right', 'right', 'right', 'left', 'right', 'right'],
      rows: bfeRuns.map((x) => [
        x.setting,
        x.speedVsBase?.toFixed(3) ?? '',
        x.speedVsSentenceTransformers?.toFixed(3) ?? 'n/a',
        x.cpuSeconds!.toFixed(1),
        x.load?.toFixed(1) ?? '',
        x.minTokenCosineVsBfe === null ? 'n/a' : x.identicalToBfe === true ? 'yes' : 'no',
        x.minCosineVsBfe === undefined ? '' : fmtCos(x.minCosineVsBfe),
        x.minTokenCosineVsBfe === undefined || x.minTokenCosineVsBfe === null
          ? ''
          : x.minTokenCosineVsBfe.toFixed(7),
      ]),
    });
  }
  if (r.bestBfe !== null && r.runs.filter((x) => x.peer === 'bfe').length > 1)
    out(`fastest bfe: ${r.bestBfe}`);
  const busy = r.runs.filter((x) => (x.otherCores ?? 0) > CONTENDED_CORES);
  if (busy.length > 0) {
    out(
      `WARNING: other processes used CPU during ${busy.map((x) => `${x.peer} ${x.setting}`).join(', ')}: those timings are inflated; rerun on a quiet machine or with --repeat`,
    );
  }
  for (const x of r.runs) {
    if (x.tokenMismatch !== undefined) {
      out(
        `WARNING: ${x.peer} ${x.setting} counts ${x.tokenMismatch} tokens, not ${r.tokens}: its tokenizer or truncation differs`,
      );
    }
  }
  for (const u of r.unavailable) out(`UNAVAILABLE: ${u.peer} ${u.setting}: ${u.error}`);
  out();
}

/** Mean cores other processes used, as text. */
export function fmtOthers(otherCpuSeconds: number | null, seconds: number): string {
  return otherCpuSeconds === null ? 'unknown' : `${(otherCpuSeconds / seconds).toFixed(2)} cores`;
}

function fmtCos(c: { full: number | null; truncated: number | null }): string {
  const f = (v: number | null): string => (v === null ? '-' : v.toFixed(5));
  return `${f(c.full)} / ${f(c.truncated)}`;
}

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
