import { describe, expect, it } from 'vitest';
import { liveServer, post, send } from './testing/live.js';

const ALICE = 'alice-key-0123456789abcdef';
const BOB = 'bob-key-0123456789abcdef00';
const ADMIN = 'admin-key-0123456789abcdef';
const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** The sample lines (not comments) of a Prometheus text. */
const samples = (text: string): string[] =>
  text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));

describe('/metrics, scoped by key', () => {
  it('shows a tenant key its own banks’ series only; an admin key everything', async () => {
    const server = await liveServer({
      keys: {
        [ALICE]: { banks: ['alice'], write: true },
        [BOB]: { banks: ['bob'], write: true },
        [ADMIN]: { banks: [], admin: true },
      },
    });
    try {
      for (const [key, bank] of [
        [ALICE, 'alice'],
        [BOB, 'bob'],
      ] as const) {
        const added = await post(
          server.port,
          `/v1/banks/${bank}/memories`,
          { memories: [{ id: 'm1', text: `${bank} has a secret plan` }] },
          auth(key),
        );
        expect(added.status).toBe(200);
        const found = await post(
          server.port,
          `/v1/banks/${bank}/search`,
          { query: 'plan' },
          auth(key),
        );
        expect(found.status).toBe(200);
      }
      // Alice probing Bob's bank is answered 404 and counted nowhere Bob or Alice can see.
      expect(
        (await send(server.port, '/v1/banks/bob/memories/m1', { headers: auth(ALICE) })).status,
      ).toBe(404);

      const alice = await send(server.port, '/metrics', { headers: auth(ALICE) });
      expect(alice.status).toBe(200);
      expect(alice.headers['content-type']).toMatch(/^text\/plain/);
      const lines = samples(alice.text);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatch(/[{,]bank="alice"[,}]/);
      expect(alice.text).toMatch(
        /^bfe_bank_requests_total\{bank="alice",route="\/v1\/banks\/:bank\/search",method="POST",status="200"\} 1$/m,
      );
      expect(alice.text).toMatch(
        /^bfe_bank_request_duration_seconds_bucket\{le="\+Inf",bank="alice",.*\} 1$/m,
      );
      expect(alice.text).not.toMatch(/bob|bfe_store_|bfe_http_|process_|nodejs_/);

      const bob = await send(server.port, '/metrics', { headers: auth(BOB) });
      for (const line of samples(bob.text)) expect(line).toMatch(/[{,]bank="bob"[,}]/);

      const admin = await send(server.port, '/metrics', { headers: auth(ADMIN) });
      expect(admin.text).toMatch(/^bfe_store_memories 2$/m);
      expect(admin.text).toMatch(/^process_cpu_user_seconds_total /m);
      expect(admin.text).toMatch(/bfe_bank_requests_total\{bank="bob",/);
      expect(admin.text).toMatch(
        /^bfe_http_requests_total\{route="\/v1\/banks\/:bank\/memories\/:id",method="GET",status="404"\} 1$/m,
      );
    } finally {
      await server.close();
    }
  });

  it('without a keys file (the loopback user), shows everything, per bank only for banks that exist', async () => {
    const server = await liveServer();
    try {
      await post(server.port, '/v1/banks/alice/memories', { memories: [{ id: 'a', text: 'one' }] });
      await send(server.port, '/v1/banks/made-up-name/memories');
      const text = (await send(server.port, '/metrics')).text;
      expect(text).toMatch(/^bfe_store_memories 1$/m);
      expect(text).toMatch(/bfe_bank_requests_total\{bank="alice",/);
      expect(text).not.toMatch(/made-up-name/);
    } finally {
      await server.close();
    }
  });
});
