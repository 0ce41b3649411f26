import { describe, expect, it, vi } from 'vitest';
import { SplitError } from '@bfe/core';
import { buildProgram, main } from './program.js';
import { debugRequested, handleError } from './errors.js';

describe('bfe program', () => {
  it('registers the data subcommands', () => {
    const data = buildProgram().commands.find((c) => c.name() === 'data');
    expect(data?.commands.map((c) => c.name())).toEqual(['list', 'fetch', 'inspect', 'split']);
  });

  it('exits 2 on an unknown command, printing to stderr only', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    expect(await main(['node', 'bfe', 'nope'])).toBe(2);
    expect(err).toHaveBeenCalled();
  });

  it('exits 2 on an unknown command even with --help (not the top-level help and 0)', async () => {
    const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    const out = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    expect(await main(['node', 'bfe', 'nope', '--help'])).toBe(2);
    expect(err.mock.calls.map(([text]) => String(text)).join('')).toMatch(/unknown command 'nope'/);
    expect(out).not.toHaveBeenCalled();
    expect(await main(['node', 'bfe', '--debug', 'nope'])).toBe(2);
  });
});

describe('handleError', () => {
  it('prints code, message and suggestion of a user error and returns 2', () => {
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => lines.push(String(line)));
    expect(
      handleError(new SplitError('one component', { suggestion: 'use the shared bank' })),
    ).toBe(2);
    expect(lines).toEqual(['bfe: SPLIT_IMPOSSIBLE: one component', '  use the shared bank']);
  });

  it('treats anything else as a bug: exit 1 with the stack', () => {
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => lines.push(String(line)));
    expect(handleError(new TypeError('boom'))).toBe(1);
    expect(lines[0]).toContain('internal error');
    expect(lines[1]).toContain('TypeError: boom');
  });

  it('maps a raw disk-full error to STORAGE_FULL with its path, exit 2, no stack', () => {
    const lines: string[] = [];
    vi.spyOn(console, 'error').mockImplementation((line: unknown) => lines.push(String(line)));
    const raw = Object.assign(new Error('ENOSPC: no space left on device, write'), {
      code: 'ENOSPC',
      syscall: 'write',
      path: '/cache/objects/encode/x/memories.arrow',
    });
    expect(handleError(raw)).toBe(2);
    expect(lines[0]).toBe(
      'bfe: STORAGE_FULL: no space left on the device (ENOSPC) writing /cache/objects/encode/x/memories.arrow',
    );
    expect(lines.join('\n')).not.toContain('    at ');
    lines.length = 0;
    expect(handleError(raw, { debug: true })).toBe(2);
    expect(lines.join('\n')).toContain('    at ');
  });

  it('takes --debug anywhere on the command line, or BFE_DEBUG=1', () => {
    expect(debugRequested(['node', 'bfe', 'run', 'x.yaml', '--debug'], {})).toBe(true);
    expect(debugRequested(['node', 'bfe', 'run', 'x.yaml'], { BFE_DEBUG: '1' })).toBe(true);
    expect(debugRequested(['node', 'bfe', 'run', 'x.yaml'], {})).toBe(false);
  });
});
