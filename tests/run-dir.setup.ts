import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * A directory made for this vitest run and removed at its end: what several test files of
     * the run compute once and share (tests/shared-locomo-bank.ts). Never reused by a later run.
     */
    bfeRunDir: string;
  }
}

/** Vitest global setup of the end-to-end project: the run's shared directory. */
export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'bfe-e2e-run-'));
  project.provide('bfeRunDir', dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
