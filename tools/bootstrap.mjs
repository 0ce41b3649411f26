#!/usr/bin/env node
// Sets up a fresh clone and then runs one root script: `node tools/bootstrap.mjs <script>`.
// It needs only Node 20 and npm: pnpm 12.4.2 is installed when missing (globally, or into
// .tools/ when the global prefix is not writable), then the workspace is installed from the
// lockfile, then `pnpm run <script>` runs with that pnpm on PATH.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const PNPM_VERSION = '12.4.2';
const root = fileURLToPath(new URL('..', import.meta.url));
const script = process.argv[2];
const rest = process.argv.slice(3);
const env = { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' };

const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 20 || (major === 20 && minor < 19)) {
  console.error(`bfe needs Node >= 20.19; this is ${process.versions.node}.`);
  process.exit(1);
}

function run(cmd, args, options = {}) {
  return spawnSync(cmd, args, { cwd: root, env, stdio: 'inherit', ...options });
}

function pnpmVersion() {
  const r = spawnSync('pnpm', ['--version'], { cwd: root, env, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

if (pnpmVersion() !== PNPM_VERSION) {
  const local = join(root, '.tools', 'node_modules', '.bin');
  env.PATH = `${local}${delimiter}${env.PATH ?? ''}`;
  if (pnpmVersion() !== PNPM_VERSION) {
    console.log(`bootstrap: installing pnpm ${PNPM_VERSION}`);
    const global = run('npm', ['install', '--global', '--save-exact', `pnpm@${PNPM_VERSION}`]);
    if (global.status !== 0 || pnpmVersion() !== PNPM_VERSION) {
      run('npm', [
        'install',
        '--prefix',
        join(root, '.tools'),
        '--save-exact',
        `pnpm@${PNPM_VERSION}`,
      ]);
    }
    if (pnpmVersion() !== PNPM_VERSION) {
      console.error(`bootstrap: could not install pnpm ${PNPM_VERSION}`);
      process.exit(1);
    }
  }
}

// Cheap when nothing changed; frozen so a fresh clone gets exactly the locked tree.
const install = run('pnpm', ['install', '--frozen-lockfile', '--reporter=append-only']);
if (install.status !== 0) process.exit(install.status ?? 1);
if (!existsSync(join(root, 'node_modules', '.modules.yaml'))) {
  console.error('bootstrap: pnpm install left no node_modules');
  process.exit(1);
}

if (script !== undefined) {
  const r = run('pnpm', ['run', script, ...rest]);
  process.exit(r.status ?? 1);
}
