import { Command } from 'commander';
import { ConfigError } from '@bfe/core';
import type { CompactReport, ExportReport, StoreReport, VerifyReport } from '@bfe/store';

interface JsonOption {
  json?: boolean;
}

/**
 * `bfe store stats|compact|verify|export`: operator tools for a memory store directory.
 * `stats`, `compact` and `export` open the store as its writer (no model loaded: the stored
 * vectors are used as they are), so a store a running `bfe serve` holds is refused
 * (STORE_LOCKED, exit 2); `verify` reads without repairing anything.
 */
export function storeCommand(): Command {
  const store = new Command('store')
    .description(
      'a memory store directory: statistics, compaction, an integrity check, Arrow export',
    )
    .exitOverride();

  store.addCommand(
    new Command('stats')
      // A usage error reaches `main` (exit 2, as the program's own), not commander's exit 1.
      .exitOverride()
      .description(
        'memories, tokens, segments, bytes on disk (segments, WAL, manifest) and per token, per bank; the settings MANIFEST.json keeps (codec, window)',
      )
      .argument('<dir>', 'the store directory')
      .option('--json', 'print JSON')
      .action(async (dir: string, opts: JsonOption) => {
        const { openForMaintenance, storeReport } = await import('@bfe/store');
        const opened = await openForMaintenance(dir);
        let report: StoreReport;
        try {
          report = await storeReport(opened.store, opened.manifest, opened.dir);
        } finally {
          await opened.store.close({ flush: false });
        }
        if (opts.json === true) console.log(JSON.stringify(report, null, 2));
        else await printStats(report);
      }),
  );

  store.addCommand(
    new Command('compact')
      .exitOverride()
      .description(
        "flush, then merge each bank's segments, dropping superseded and deleted rows; prints segments, rows and bytes before and after",
      )
      .argument('<dir>', 'the store directory')
      .option('--bank <name>', 'compact this bank only')
      .option(
        '--codec <codec>',
        'migrate the store to this token codec (fp32, fp16, sq8, sq4): every segment rewritten',
      )
      .option('--json', 'print JSON')
      .action(async (dir: string, opts: JsonOption & { bank?: string; codec?: string }) => {
        const { compactStore, openForMaintenance, storeCodecSchema } = await import('@bfe/store');
        const codec = opts.codec === undefined ? undefined : storeCodecSchema.safeParse(opts.codec);
        if (codec !== undefined && !codec.success)
          throw new ConfigError(`--codec must be one of fp32, fp16, sq8, sq4, not '${opts.codec}'`);
        const { store: opened } = await openForMaintenance(dir);
        let report: CompactReport;
        try {
          report = await compactStore(opened, { bank: opts.bank, codec: codec?.data });
        } finally {
          await opened.close();
        }
        if (opts.json === true) console.log(JSON.stringify(report, null, 2));
        else await printCompact(report);
      }),
  );

  store.addCommand(
    new Command('verify')
      .exitOverride()
      .description(
        'read every segment in full (size, SHA-256, schema) and every WAL generation, and look for files the manifest does not name; changes nothing; exit 1 when anything is wrong',
      )
      .argument('<dir>', 'the store directory')
      .option('--json', 'print JSON')
      .action(async (dir: string, opts: JsonOption) => {
        const { verifyStore } = await import('@bfe/store');
        const { progressPrinter } = await import('../cli/progress.js');
        const progress = progressPrinter(opts.json === true);
        const report = await verifyStore(dir, {
          onProgress: (done, total) => progress('segments', done, total),
        });
        if (opts.json === true) console.log(JSON.stringify(report, null, 2));
        else await printVerify(report);
        if (report.intact) return;
        if (opts.json !== true)
          console.error(
            report.problems.every((p) => p.kind === 'unlisted')
              ? 'Only files the manifest does not name: the next open of the store removes those it recognises as leftovers of interrupted writes.'
              : 'Restore the store directory from a backup: a damaged segment cannot be rebuilt from the WAL once flushed.',
          );
        // Damage is a finding, not a usage error: exit 1 once stdout has drained.
        await exitAfterFlush(1);
      }),
  );

  store.addCommand(
    new Command('export')
      .exitOverride()
      .description(
        'write the live memories as Arrow IPC files (memories.arrow, tokens.arrow) that pyarrow, polars or DuckDB read, from one snapshot',
      )
      .argument('<dir>', 'the store directory')
      .requiredOption('--out <dir>', 'the folder to write memories.arrow and tokens.arrow to')
      .option('--bank <name>', 'export this bank only')
      .option('--force', 'replace memories.arrow and tokens.arrow already in --out')
      .option('--json', 'print JSON')
      .action(
        async (dir: string, opts: JsonOption & { out: string; bank?: string; force?: boolean }) => {
          const { exportStore, openForMaintenance } = await import('@bfe/store');
          const { progressPrinter } = await import('../cli/progress.js');
          const progress = progressPrinter(opts.json === true);
          const { store: opened } = await openForMaintenance(dir);
          let report: ExportReport;
          try {
            report = await exportStore(opened, opts.out, {
              bank: opts.bank,
              overwrite: opts.force === true,
              onBank: (done, total, bank) => progress('banks', done, total, bank),
            });
          } finally {
            await opened.close({ flush: false });
          }
          if (opts.json === true) {
            console.log(JSON.stringify(report, null, 2));
            return;
          }
          const { formatBytes } = await import('@bfe/core');
          console.log(
            `Exported ${report.memories} memories and ${report.tokens} tokens of ${report.banks.length} bank(s):`,
          );
          console.log(`  ${report.files.memories} (${formatBytes(report.bytes.memories)})`);
          console.log(`  ${report.files.tokens} (${formatBytes(report.bytes.tokens)})`);
        },
      ),
  );

  return store;
}

async function printStats(r: StoreReport): Promise<void> {
  const { formatBytes, terminalTable } = await import('@bfe/core');
  const perToken = (v: number | null): string => (v === null ? '-' : `${v.toFixed(0)} B`);
  const window =
    r.settings.window === undefined
      ? 'none (truncated)'
      : `${r.settings.window.size} tokens, stride ${r.settings.window.stride}`;
  console.log(`store ${r.dir}`);
  console.log(`  model    ${r.model} (${r.dim}-d)`);
  console.log(
    `  codec    ${r.settings.codec}${r.codecRecorded ? '' : ' (not recorded: the default)'}`,
  );
  console.log(`  window   ${window}`);
  console.log(
    `  ${r.memories} memories, ${r.tokens} tokens, ${r.segments} segment(s) in ${r.banks.length} bank(s)`,
  );
  console.log(
    `  on disk  ${formatBytes(r.bytes.total)}: segments ${formatBytes(r.bytes.segments)}, WAL ${formatBytes(r.bytes.wal)}, manifest ${formatBytes(r.bytes.manifest)}; ${perToken(r.bytesPerToken)} per live token; graphs ${formatBytes(r.bytes.graphs)} (derived)`,
  );
  if (r.banks.length === 0) return;
  console.log('');
  console.log(
    terminalTable({
      head: ['BANK', 'MEMORIES', 'TOKENS', 'SEGMENTS', 'SEGMENT BYTES', 'BYTES/TOKEN', 'UNFLUSHED'],
      align: ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
      rows: r.banks.map((b) => [
        b.bank,
        String(b.memories),
        String(b.tokens),
        String(b.segments),
        formatBytes(b.segmentBytes),
        perToken(b.bytesPerToken),
        String(b.memtableRows),
      ]),
    }),
  );
}

async function printCompact(r: CompactReport): Promise<void> {
  const { formatBytes, terminalTable } = await import('@bfe/core');
  if (r.flushedRows > 0) console.log(`Flushed ${r.flushedRows} row(s) from the WAL to segments.`);
  if (r.codecAfter !== r.codecBefore) console.log(`Codec ${r.codecBefore} → ${r.codecAfter}.`);
  if (r.banks.length === 0) {
    console.log(
      `Nothing to compact${r.bank === undefined ? '' : ` in bank ${r.bank}`}: every bank has one segment or none and no tombstone to drop.`,
    );
  } else {
    console.log(
      terminalTable({
        head: ['BANK', 'SEGMENTS IN', 'OUT', 'ROWS IN', 'OUT', 'TOMBSTONES DROPPED'],
        align: ['left', 'right', 'right', 'right', 'right', 'right'],
        rows: r.banks.map((b) => [
          b.bank,
          String(b.segmentsIn),
          String(b.segmentsOut),
          String(b.rowsIn),
          String(b.rowsOut),
          String(b.tombstonesDropped),
        ]),
      }),
    );
  }
  console.log(
    `Segments ${r.segmentsBefore} → ${r.segmentsAfter}, rows ${r.rowsIn} → ${r.rowsOut}; on disk ${formatBytes(r.bytesBefore)} → ${formatBytes(r.bytesAfter)}.`,
  );
}

async function printVerify(r: VerifyReport): Promise<void> {
  const { formatBytes } = await import('@bfe/core');
  for (const w of r.wal)
    console.log(
      `${w.file}: ${w.records} record(s) (${w.adds} add(s) of ${w.rows} row(s), ${w.deletes} delete(s); ${w.checkpointed} already in segments), ${formatBytes(w.bytes)}${w.tornBytes > 0 ? `, torn tail ${w.tornBytes} B` : ''}`,
    );
  for (const note of r.notes) console.log(`note: ${note}`);
  for (const p of r.problems) console.log(`BAD ${p.file}: ${p.message}`);
  const s = r.segments;
  console.log(
    `${r.intact ? 'Intact' : `NOT INTACT: ${r.problems.length} problem(s)`}: ${s.checked} segment(s) intact (${s.rows} rows, ${s.tokens} tokens, ${formatBytes(s.bytes)}), ${r.wal.length} WAL generation(s), in ${r.dir}.`,
  );
}

/**
 * `main` maps only thrown errors to exit codes, so a command that must report a finding with
 * exit 1 exits itself, after what it printed has reached stdout.
 */
function exitAfterFlush(code: number): Promise<never> {
  return new Promise<never>(() => {
    process.stdout.write('', () => process.exit(code));
  });
}
