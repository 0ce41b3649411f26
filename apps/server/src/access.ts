import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import type { MemoryStore } from '@bfe/store';
import { HttpError, noBank } from './http-errors.js';
import { canSee, type Grant } from './keys.js';

/** The Fastify instance routes are declared on: zod schemas through the type provider. */
export type App = FastifyInstance<
  Server,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  ZodTypeProvider
>;

/**
 * Checks a request may reach `bank`: a bank its key does not list is answered exactly like a
 * bank the store does not hold (404 `no bank`); `write` needs a key with `write: true` (403);
 * `exists` needs the bank to hold at least one memory.
 */
export function reachBank(
  request: FastifyRequest,
  store: MemoryStore,
  bank: string,
  need: { readonly write?: boolean; readonly exists?: boolean },
): void {
  grantReaches(request.grant, store, bank, need);
}

/** {@link reachBank} for a grant held outside a request (the MCP tools). */
export function grantReaches(
  grant: Grant,
  store: MemoryStore,
  bank: string,
  need: { readonly write?: boolean; readonly exists?: boolean },
): void {
  if (!canSee(grant, bank)) throw noBank(bank);
  if (need.write === true && !grant.write)
    throw new HttpError(403, 'FORBIDDEN', 'this key may not write');
  if (need.exists === true && !store.hasBank(bank)) throw noBank(bank);
}
