import { Command } from 'commander';

interface CacheDirOption {
  cacheDir?: string;
  json?: boolean;
}

const CACHE_DIR_HELP = 'the cache directory (default: $BFE_CACHE_DIR, else ./.bfe-cache)';

/** `bfe cache ls|verify|gc|push|keygen`: the content-addressed artifact store of `bfe run`. */
export function cacheCommand(): Command {
  const cache = new Command('cache').description(
    'the artifact cache of pipeline stages: list, verify, collect garbage, push to the team cache',
  );

  cache.addCommand(
    new Command('ls')
      .description('list cached artifacts: stage, key, size, created, last used')
      .option('--cache-dir <dir>', CACHE_DIR_HELP)
      .option('--json', 'print JSON')
      .action(async (opts: CacheDirOption) => {
        const { ArtifactStore } = await import('../cache/index.js');
        const store = await ArtifactStore.open({ root: opts.cacheDir, create: false });
        const entries = await store.list();
        if (opts.json === true) {
          console.log(JSON.stringify({ root: store.root, artifacts: entries }, null, 2));
          return;
        }
        if (entries.length === 0) {
          console.log(`No artifacts in ${store.root}.`);
          return;
        }
        const { terminalTable } = await import('@bfe/core');
        console.log(
          terminalTable({
            head: ['STAGE', 'KEY', 'SIZE', 'CREATED', 'LAST USED'],
            align: ['left', 'left', 'right', 'left', 'left'],
            rows: entries.map((e) => [
              e.stage,
              e.key.slice(0, 12),
              formatBytes(e.bytes),
              e.createdAt === null ? '(no manifest)' : formatTime(e.createdAt),
              formatTime(e.lastUsedAt),
            ]),
          }),
        );
        const total = entries.reduce((sum, e) => sum + e.bytes, 0);
        console.log(`${entries.length} artifact(s), ${formatBytes(total)} in ${store.root}`);
      }),
  );

  cache.addCommand(
    new Command('verify')
      .description('re-hash every file of every artifact (SHA-256); exit 1 when any is corrupt')
      .option('--cache-dir <dir>', CACHE_DIR_HELP)
      .option('--quarantine', 'move corrupt artifacts aside so the next run recomputes them')
      .option('--json', 'print JSON')
      .action(async (opts: CacheDirOption & { quarantine?: boolean }) => {
        const { ArtifactStore } = await import('../cache/index.js');
        const { progressPrinter } = await import('../cli/progress.js');
        const store = await ArtifactStore.open({ root: opts.cacheDir, create: false });
        const progress = progressPrinter(opts.json === true);
        const report = await store.verify({
          quarantine: opts.quarantine === true,
          onProgress: (done, total) => progress('verify', done, total),
        });
        if (opts.json === true) {
          console.log(JSON.stringify(report, null, 2));
        } else {
          for (const c of report.corrupt) {
            console.log(`CORRUPT ${c.stage} ${c.key} ${c.dir}`);
            for (const p of c.problems) console.log(`  - ${p}`);
            if (c.quarantinedTo !== null) console.log(`  moved to ${c.quarantinedTo}`);
          }
          console.log(
            `Verified ${report.checked} artifact(s), ${formatBytes(report.bytes)} intact, in ${report.root}: ${report.corrupt.length} corrupt.`,
          );
        }
        if (report.corrupt.length === 0) return;
        if (opts.json !== true && opts.quarantine !== true) {
          console.error(
            'Run `bfe cache verify --quarantine` to move them aside (the next run recomputes them), then `bfe cache gc`.',
          );
        }
        // Corrupt artifacts are a finding, not a usage error: exit 1, once stdout has drained.
        await exitAfterFlush(1);
      }),
  );

  cache.addCommand(
    new Command('gc')
      .description(
        'remove leftovers of interrupted runs (temporary dirs, stale locks and leases, abandoned run folders), quarantined and, with --keep-days, unused artifacts',
      )
      .option('--cache-dir <dir>', CACHE_DIR_HELP)
      .option('--runs-dir <dir>', 'where run folders go: abandoned ones are removed', 'runs')
      .option('--keep-days <n>', 'also remove artifacts not used for more than n days')
      .option('--dry-run', 'only print what would be removed')
      .option('--json', 'print JSON')
      .action(
        async (opts: CacheDirOption & { keepDays?: string; dryRun?: boolean; runsDir: string }) => {
          const { z } = await import('zod');
          const { ConfigError } = await import('@bfe/core');
          const { ArtifactStore } = await import('../cache/index.js');
          const keepDays = z.coerce.number().nonnegative().optional().safeParse(opts.keepDays);
          if (!keepDays.success) {
            throw new ConfigError(
              `--keep-days: ${z.prettifyError(keepDays.error)} (got '${opts.keepDays}')`,
            );
          }
          const { cleanRunFolders } = await import('../experiment/run-folder-gc.js');
          const store = await ArtifactStore.open({ root: opts.cacheDir, create: false });
          const dryRun = opts.dryRun === true;
          const cacheReport = await store.gc({ keepDays: keepDays.data, dryRun });
          const runs = await cleanRunFolders(opts.runsDir, { dryRun });
          const report = {
            ...cacheReport,
            removed: [
              ...cacheReport.removed,
              ...runs.map((r) => ({
                kind: 'run' as const,
                path: r.path,
                bytes: 0,
                reason: r.reason,
              })),
            ],
          };
          if (opts.json === true) {
            console.log(JSON.stringify(report, null, 2));
            return;
          }
          const verb = report.dryRun ? 'would remove' : 'removed';
          for (const r of report.removed) {
            console.log(`${verb} ${r.kind} ${r.path} (${formatBytes(r.bytes)}): ${r.reason}`);
          }
          for (const b of report.busy) console.log(`skipped ${b}: in use by a running process`);
          console.log(
            `${report.dryRun ? 'Would free' : 'Freed'} ${formatBytes(report.bytes)} (${report.removed.length} item(s)); ${report.kept} artifact(s) kept in ${report.root}.`,
          );
        },
      ),
  );
  cache.addCommand(
    new Command('push')
      .description(
        'upload every local artifact the team cache (TURBO_API, TURBO_TOKEN, TURBO_TEAM) lacks, each re-hashed first',
      )
      .option('--cache-dir <dir>', CACHE_DIR_HELP)
      .option('--json', 'print JSON')
      .action(async (opts: CacheDirOption) => {
        const {
          ArtifactStore,
          RemoteCacheClient,
          RemoteCacheError,
          pushArtifacts,
          remoteCacheFromEnv,
        } = await import('../cache/index.js');
        const { progressPrinter } = await import('../cli/progress.js');
        const config = remoteCacheFromEnv();
        if (config === undefined) {
          throw new RemoteCacheError(
            'REMOTE_CACHE_UNAVAILABLE',
            'No team cache: set TURBO_API, TURBO_TOKEN and TURBO_TEAM (and not BFE_REMOTE_CACHE=off).',
          );
        }
        const client = new RemoteCacheClient(config);
        await client.preflight();
        const store = await ArtifactStore.open({ root: opts.cacheDir, create: false });
        const progress = progressPrinter(opts.json === true);
        const report = await pushArtifacts(client, await store.list(), (done, total) =>
          progress('push', done, total),
        );
        if (opts.json === true) {
          console.log(JSON.stringify({ root: store.root, api: config.api, ...report }, null, 2));
          return;
        }
        console.log(
          `${report.uploaded} uploaded (${formatBytes(report.bytes)}), ${report.present} already on ${config.api}, ${report.corrupt.length} corrupt (not uploaded) of ${report.checked} in ${store.root}`,
        );
        for (const dir of report.corrupt)
          console.log(`corrupt: ${dir} (bfe cache verify --quarantine)`);
        if (report.corrupt.length > 0) process.exitCode = 1;
      }),
  );
  cache.addCommand(
    new Command('keygen')
      .description(
        'make the team cache publisher key pair: cache-signing.pem for the machines allowed to publish (BFE_CACHE_SIGNING_KEY), cache-verify.pem for every reader (BFE_CACHE_VERIFY_KEY)',
      )
      .option('--out <dir>', 'the folder to write the two files to', '.')
      .action(async (opts: { out: string }) => {
        const [{ generatePublisherKeys }, { mkdir, writeFile }, { join }, { ConfigError }] =
          await Promise.all([
            import('../cache/index.js'),
            import('node:fs/promises'),
            import('node:path'),
            import('@bfe/core'),
          ]);
        const keys = generatePublisherKeys();
        const signing = join(opts.out, 'cache-signing.pem');
        const verify = join(opts.out, 'cache-verify.pem');
        await mkdir(opts.out, { recursive: true });
        try {
          // Never over an existing key: a replaced pair would orphan every published artifact.
          await writeFile(signing, keys.signingPem, { flag: 'wx', mode: 0o600 });
          await writeFile(verify, keys.verifyPem, { flag: 'wx', mode: 0o644 });
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          throw new ConfigError(`${(error as NodeJS.ErrnoException).path} already exists.`, {
            suggestion: 'Keep the pair you have, or choose another --out folder.',
          });
        }
        console.log(`publisher key ${keys.keyId}`);
        console.log(`  ${signing}  private: BFE_CACHE_SIGNING_KEY on the machines that publish`);
        console.log(`  ${verify}  public: BFE_CACHE_VERIFY_KEY on every reader`);
      }),
  );

  return cache;
}

/** `1536` → `1.5 KiB`. */
function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** An ISO time as local `YYYY-MM-DD HH:MM`. */
function formatTime(iso: string): string {
  const d = new Date(iso);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
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
