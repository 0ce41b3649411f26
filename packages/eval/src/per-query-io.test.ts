import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DataError, DataMissingError } from '@bfe/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { evaluate } from './evaluate.js';
import type { EvaluateInput } from './evaluate.js';
import { perQueryLines, recomputeFromPerQuery } from './per-query.js';
import type { PerQueryLine } from './per-query.js';
import { parsePerQueryLine, readPerQueryJsonl, writePerQueryJsonl } from './per-query-io.js';
import { syntheticBenchmark } from './testing/synthetic.js';

let root: string;
beforeEach(() => {
  root = tmpDir('bfe-eval-');
});

const line: PerQueryLine = {
  system: 'bm25',
  queryId: 'conv-26:q0',
  subtask: '2',
  ranked: ['conv-26:D1:3', 'conv-26:D2:8'],
  relevant: ['conv-26:D1:3'],
};

describe('per-query.jsonl', () => {
  it('round-trips a file, and the file alone recomputes every metric', async () => {
    const subtasks = ['1', '2', '3', '4'];
    const systems = ['pooled', 'sparse-fusion'];
    const { inputs } = syntheticBenchmark(7, 300, subtasks, systems);
    const direct = systems.map((s) => evaluate(inputs.get(s) as EvaluateInput));
    const path = join(root, 'per-query.jsonl');
    async function* all() {
      for (let i = 0; i < systems.length; i++)
        yield* perQueryLines(systems[i] as string, direct[i]!);
    }
    expect(await writePerQueryJsonl(path, all())).toEqual({ lines: 600 });
    expect(readdirSync(root)).toEqual(['per-query.jsonl']);
    const text = readFileSync(path, 'utf8');
    expect(text.split('\n')).toHaveLength(601);
    expect(JSON.parse(text.split('\n')[0] as string)).toHaveProperty('system', 'pooled');

    const lines = await readPerQueryJsonl(path);
    expect(lines).toHaveLength(600);
    const recomputed = recomputeFromPerQuery(lines, { subtasks });
    for (let i = 0; i < systems.length; i++) {
      const again = recomputed.get(systems[i] as string);
      expect(again?.metrics).toEqual(direct[i]?.metrics);
      expect(again?.subtasks).toEqual(direct[i]?.subtasks);
      expect(again?.dropped).toEqual(direct[i]?.dropped);
    }
  });

  it('names the line number of a bad line', async () => {
    const path = join(root, 'bad.jsonl');
    writeFileSync(
      path,
      [JSON.stringify(line), '', JSON.stringify({ ...line, ranked: ['a', 'a'] })].join('\n'),
    );
    await expect(readPerQueryJsonl(path)).rejects.toThrow(DataError);
    await expect(readPerQueryJsonl(path)).rejects.toThrow(`${path}:3: not a per-query line:`);
    writeFileSync(path, `${JSON.stringify(line)}\n{"system": "bm25",\n`);
    await expect(readPerQueryJsonl(path)).rejects.toThrow(`${path}:2: not valid JSON`);
  });

  it('reports a missing file as DataMissingError', async () => {
    await expect(readPerQueryJsonl(join(root, 'nope.jsonl'))).rejects.toThrow(DataMissingError);
  });

  it('validates each line on write and leaves no file behind when one is invalid', async () => {
    const path = join(root, 'per-query.jsonl');
    const bad = { ...line, queryId: '' };
    await expect(writePerQueryJsonl(path, [line, bad])).rejects.toThrow(
      /writePerQueryJsonl: line 2 is invalid/,
    );
    expect(readdirSync(root)).toEqual([]);
    // Invalid first line: the temporary file is already removed when the promise rejects.
    await expect(writePerQueryJsonl(path, [bad])).rejects.toThrow(/line 1 is invalid/);
    expect(readdirSync(root)).toEqual([]);
  });

  it('parses a single line and rejects unknown keys', () => {
    expect(parsePerQueryLine(JSON.stringify(line), 1)).toEqual(line);
    expect(() => parsePerQueryLine(JSON.stringify({ ...line, score: 1 }), 4, 'f.jsonl')).toThrow(
      /^f\.jsonl:4: not a per-query line:/,
    );
  });
});
