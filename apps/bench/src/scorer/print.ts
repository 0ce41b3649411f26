/** The human tables of `pnpm bench:scorer` (Markdown, to paste into BENCHMARKS.md). */
import { out, printJson, printTable, type Align } from '../shared/table.js';
import type { Cli } from './cli.js';
import type { ScorerReport } from './report.js';

export function printReport(cli: Cli, report: ScorerReport): void {
  const { machine, throughput, latencyMs, rss, failures } = report;
  const m = (v: number | null | undefined) => (v == null ? '—' : (v / 1e6).toFixed(0));
  const print = (head: string[], rows: string[][], align: Align[]): void =>
    printTable({ head, rows, align }, { markdown: true });
  out(
    `\nExact top-${cli.k}, d = ${cli.dim}, ${cli.threads} threads, ${machine.cpu} (${machine.cores} cores)`,
  );
  out('similarities per second, millions (median run); ratio = bfe / faster of numpy and faiss');
  print(
    [
      'bank tokens',
      'query rows',
      'bfe',
      'numpy',
      'faiss',
      'ratio',
      'top-k agreement (numpy, faiss)',
      'other CPU, cores (bfe, numpy, faiss)',
    ],
    throughput.map((r) => [
      r.size.toLocaleString('en'),
      String(r.rows),
      m(r.simsPerSecond.bfe),
      m(r.simsPerSecond.numpy),
      m(r.simsPerSecond.faiss),
      r.ratioToFasterPeer == null ? '—' : `${r.ratioToFasterPeer.toFixed(2)}×`,
      r.agreement.numpy == null
        ? ''
        : `${(100 * r.agreement.numpy).toFixed(1)}%, ${(100 * (r.agreement.faiss ?? 0)).toFixed(1)}%`,
      ['bfe', 'numpy', 'faiss'].map((p) => r.otherCpuCores[p]?.toFixed(2) ?? '—').join(', '),
    ]),
    ['right', 'right', 'right', 'right', 'right', 'right', 'left', 'right'],
  );
  out('\nOne query (20 tokens, k = 64) against a 50,000-token bank, milliseconds');
  print(
    ['case', 'p50', 'p90', 'min'],
    Object.entries(latencyMs).map(([name, l]) => [
      name,
      l.p50.toFixed(2),
      l.p90.toFixed(2),
      l.min.toFixed(2),
    ]),
    ['left', 'right', 'right', 'right'],
  );
  out('\nPeak RSS, MiB (base = before generating the bank)');
  print(
    ['bank tokens', 'bank float32', 'bfe base → peak', 'numpy+faiss base → peak', 'bfe passes'],
    rss.map((r) => [
      `${r.size.toLocaleString('en')}${r.streamed ? ' (streamed)' : ''}`,
      r.bankMb.toFixed(0),
      r.bfe ? `${r.bfe.baseMb.toFixed(0)} → ${r.bfe.peakMb.toFixed(0)}` : '—',
      r.python ? `${r.python.baseMb.toFixed(0)} → ${r.python.peakMb.toFixed(0)}` : '—',
      String(r.bfe?.passes ?? '—'),
    ]),
    ['right', 'right', 'right', 'right', 'right'],
  );
  for (const f of failures) out(`\nFAILED ${f.peer} at ${f.size}: ${f.error}`);
  out();
  printJson(report);
}
