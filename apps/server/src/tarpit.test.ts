import { afterEach, describe, expect, it, vi } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { MemoryStore } from '@bfe/store';
import { fakeEmbedder } from '@bfe/store/testing';
import { buildServer } from './app.js';
import { keysPolicy } from './keys.js';
import { createTarpit } from './tarpit.js';

afterEach(() => {
  vi.useRealTimers();
});

/** Whether `p` has settled after the microtasks queued now have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await Promise.resolve();
  await Promise.resolve();
  return done;
}

describe('createTarpit', () => {
  it('holds a request for its time, at most perKey per key and total in all', async () => {
    vi.useFakeTimers();
    const tarpit = createTarpit({ perKey: 2, total: 3 });
    const [a, b] = [{}, {}];
    const held = [tarpit.hold(a, 1000), tarpit.hold(a, 1000)];
    expect(await settled(tarpit.hold(a, 1000))).toBe(true); // a's third: at once
    const third = tarpit.hold(b, 1000);
    expect(await settled(tarpit.hold(b, 1000))).toBe(true); // total reached: at once
    expect(tarpit.held).toBe(3);
    expect(await settled(held[0]!)).toBe(false);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(held[0]!)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(Promise.all([...held, third]))).toBe(true);
    expect(tarpit.held).toBe(0);
    // Released, a's slots are free again.
    const again = tarpit.hold(a, 1000);
    expect(tarpit.held).toBe(1);
    tarpit.releaseAll();
    expect(await settled(again)).toBe(true);
  });

  it('does not hold for 0 ms', async () => {
    const tarpit = createTarpit();
    expect(await settled(tarpit.hold({}, 0))).toBe(true);
  });
});

describe('the tarpit on a server', () => {
  it("holds a key's request over its rate while other keys are served; closing lets it go with its 429", async () => {
    const ALICE = 'alice-key-0123456789abcdef';
    const BOB = 'bob-key-0123456789abcdef00';
    const store = await MemoryStore.open(tmpDir(), { embedder: fakeEmbedder() });
    const access = keysPolicy({
      [ALICE]: { banks: ['alice'], rate: 0.001, burst: 1 },
      [BOB]: { banks: ['bob'] },
    });
    const app = await buildServer({ store, access, tarpitMs: 60_000 });
    const get = (key: string) =>
      app.inject({ method: 'GET', url: '/v1/banks', headers: { authorization: `Bearer ${key}` } });
    try {
      expect((await get(ALICE)).statusCode).toBe(200);
      const over = get(ALICE);
      for (let i = 0; i < 3; i++) expect((await get(BOB)).statusCode).toBe(200);
      expect(await settled(over)).toBe(false);
      await app.close();
      const answered = await over;
      expect(answered.statusCode).toBe(429);
      expect(answered.json().error.code).toBe('RATE_LIMITED');
    } finally {
      await app.close();
      await store.close();
    }
  });
});
