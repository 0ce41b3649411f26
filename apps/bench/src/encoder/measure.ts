/**
 * Runs the planned measurements of `pnpm bench:encoder`, each in its own child process: rounds
 * interleaved, a contended measurement measured again, every try kept.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runChild } from '../shared/child.js';
import { waitForIdle } from '../shared/machine.js';
import { pythonDir } from '../shared/paths.js';
import type { Cli } from './cli.js';
import type { Plan, Row } from './plan.js';
import { fmtInt, fmtOthers } from './print.js';
import type { BenchJob, PeerResult } from './protocol.js';
import { CONTENDED_CORES } from './report.js';

const here = dirname(fileURLToPath(import.meta.url));

/** What every job shares: the texts, where the files go, the sampled indices, the token count. */
export interface Setup {
  readonly textsFile: string;
  readonly work: string;
  readonly sample: readonly number[];
  readonly tokens: number;
}

/** Measures every plan `cli.repeat` times, appending each try (failures included) to `rows`. */
export async function measurePlans(
  cli: Cli,
  plans: readonly Plan[],
  setup: Setup,
  rows: Row[],
  log: (line: string) => unknown,
): Promise<void> {
  const { textsFile, work, sample, tokens } = setup;
  const idle = { windowSeconds: 2, idleCores: 0.15, log: (line: string) => log(`      ${line}`) };
  const total = plans.length * cli.repeat;
  let n = 0;
  for (let round = 1; round <= cli.repeat; round++) {
    for (const plan of plans) {
      n++;
      for (let attempt = 0; attempt <= cli.retries; attempt++) {
        await waitForIdle(cli.waitIdleSeconds, idle);
        log(
          `[${n}/${total}] ${plan.peer} ${plan.setting}${attempt > 0 ? ` (retry ${attempt})` : ''} …`,
        );
        const id = `${n}-${attempt}`;
        const job: BenchJob = {
          ...plan.job,
          textsFile,
          resultFile: join(work, `result-${id}.json`),
          sample,
          warmupTexts: cli.warmup,
          maxLength: cli.maxLength,
        };
        const result = await runJob(cli, job, join(work, `job-${id}.json`));
        const load = loadavg()[0]!;
        rows.push({ peer: plan.peer, setting: plan.setting, result, load });
        if (!result.ok) {
          log(`      UNAVAILABLE: ${result.error}`);
          break;
        }
        const others =
          result.otherCpuSeconds === null ? 0 : result.otherCpuSeconds / result.seconds;
        log(
          `      ${result.seconds.toFixed(2)} s, ${fmtInt(tokens / result.seconds)} tokens/s, CPU ${result.cpuSeconds.toFixed(1)} s, others' CPU ${fmtOthers(result.otherCpuSeconds, result.seconds)}, peak RSS ${result.peakRssMb.toFixed(0)} MB, load ${load.toFixed(1)}`,
        );
        if (others <= CONTENDED_CORES) break;
      }
    }
  }
}

/** Runs one job in a child process and returns its result, or why there is none. */
async function runJob(cli: Cli, job: BenchJob, jobFile: string): Promise<PeerResult> {
  await writeFile(jobFile, JSON.stringify(job));
  const [command, args, env] =
    job.peer === 'sentence-transformers'
      ? [
          cli.python,
          [join(pythonDir, 'sentence_transformers_bench.py'), jobFile],
          {
            ...process.env,
            HF_HUB_OFFLINE: '1',
            TRANSFORMERS_OFFLINE: '1',
            ...(job.ompPassive === true ? { OMP_WAIT_POLICY: 'PASSIVE' } : {}),
          },
        ]
      : [process.execPath, [...process.execArgv, join(here, 'worker.ts'), jobFile], process.env];
  const { code, signal, tail } = await runChild(command, args, {
    env,
    timeoutSeconds: cli.timeoutSeconds,
  });
  try {
    return JSON.parse(await readFile(job.resultFile, 'utf8')) as PeerResult;
  } catch {
    const why = signal !== null ? `killed by ${signal}` : `exit code ${String(code)}`;
    return { ok: false, error: `${command} ${why}, no result${tail === '' ? '' : `: ${tail}`}` };
  }
}
