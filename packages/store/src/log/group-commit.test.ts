import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryInputError } from '../input.js';
import { MemoryStore } from '../store.js';
import { fakeEmbedder } from '../testing/index.js';
import { planGroup, type CommitRequest } from './group-commit.js';

const open = (dir: string, groupCommit: boolean) =>
  MemoryStore.open(dir, { embedder: fakeEmbedder(), compactSegments: 0, groupCommit });

describe('planGroup', () => {
  it('checks each call against the live memories as the calls before it leave them', async () => {
    const embedder = fakeEmbedder();
    const encoded = await embedder.encode(['x'], 'passage');
    const rejected: unknown[] = [];
    const add = (id: string, update = false): CommitRequest => ({
      kind: 'add',
      memories: [{ id, bank: 'b', text: 'x', meta: undefined }],
      encoded,
      update,
      resolve: () => undefined,
      reject: (error) => rejected.push(error),
    });
    const del = (ids: string[]): CommitRequest => ({
      kind: 'delete',
      bank: 'b',
      ids,
      resolve: () => undefined,
      reject: (error) => rejected.push(error),
    });
    const live = new Set(['old']);
    const plan = planGroup(
      [add('a'), add('a'), add('a', true), del(['a', 'zz']), add('a'), add('old'), del(['zz'])],
      10,
      (bank, id) => bank === 'b' && live.has(id),
    );
    // The second add of `a` and the add of the live `old` are refused; the rest go on in order.
    expect(rejected).toHaveLength(2);
    expect(rejected.every((e) => e instanceof MemoryInputError)).toBe(true);
    expect(plan.map((p) => p.record?.kind)).toEqual(['add', 'add', 'delete', 'add', undefined]);
    expect(plan.map((p) => p.record?.seq)).toEqual([10, 11, 12, 13, undefined]);
    expect(plan[2]!.outcome).toEqual({ deleted: ['a'], unknown: ['zz'] });
    expect(plan[4]!.outcome).toEqual({ deleted: [], unknown: ['zz'] });
  });
});

describe('group commit', () => {
  it('acknowledges concurrent adds with fewer fsyncs than calls, each durable', async () => {
    const dir = tmpDir('bfe-group-');
    const store = await open(dir, true);
    const ids = Array.from({ length: 16 }, (_, i) => `m${i}`);
    await Promise.all(ids.map((id) => store.add([{ id, bank: 'b', text: `memory ${id}` }])));
    const { commits } = await store.stats();
    expect(commits.records).toBe(16);
    expect(commits.syncs).toBeLessThan(16);
    expect(commits.largestGroup).toBeGreaterThan(1);
    await store.close({ flush: false });
    // Replayed from the WAL alone: every acknowledged call, in call order.
    const again = await open(dir, true);
    expect(again.list('b').items.map((m) => m.id)).toEqual(ids);
    expect(again.recovery.records).toBe(16);
    await again.close();
  });

  it('without group commit fsyncs once per call', async () => {
    const store = await open(tmpDir('bfe-nogroup-'), false);
    const ids = Array.from({ length: 8 }, (_, i) => `m${i}`);
    await Promise.all(ids.map((id) => store.add([{ id, bank: 'b', text: `memory ${id}` }])));
    expect((await store.stats()).commits).toEqual({ records: 8, syncs: 8, largestGroup: 1 });
    expect(store.list('b').items.map((m) => m.id)).toEqual(ids);
    await store.close();
  });

  it('refuses one call of a group without failing the others', async () => {
    const store = await open(tmpDir('bfe-group-refuse-'), true);
    await store.add([{ id: 'a', bank: 'b', text: 'first a' }]);
    const results = await Promise.allSettled([
      store.add([{ id: 'c', bank: 'b', text: 'the c' }]),
      store.delete(['a', 'zz'], { bank: 'b' }),
      store.add([{ id: 'd', bank: 'b', text: 'the d' }]),
    ]);
    // Two adds of one new id in flight together: both pass the check before encoding, the
    // second is refused at commit, after the first.
    const dupe = await Promise.allSettled([
      store.add([{ id: 'e', bank: 'b', text: 'one e' }]),
      store.add([{ id: 'e', bank: 'b', text: 'two e' }]),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect((results[1] as PromiseFulfilledResult<unknown>).value).toEqual({
      deleted: ['a'],
      unknown: ['zz'],
    });
    expect(dupe.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(
      (dupe.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason,
    ).toBeInstanceOf(MemoryInputError);
    expect(store.list('b').items.map((m) => [m.id, m.text])).toEqual([
      ['c', 'the c'],
      ['d', 'the d'],
      ['e', 'one e'],
    ]);
    await store.close();
  });
});
