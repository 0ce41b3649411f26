import type { z } from 'zod';
import type { MemoryInput, MemoryStore } from '@bfe/store';
import { reachBank, type App } from './access.js';
import { HttpError } from './http-errors.js';
import { errorResponses } from './responses.js';
import type { StoreWrites } from './writes.js';
import {
  addBodySchema,
  addResponseSchema,
  bankParams,
  deleteResponseSchema,
  listQuerySchema,
  listResponseSchema,
  memoryParams,
  memorySchema,
} from './schemas.js';

type Body = z.output<typeof addBodySchema>['memories'];
const inputs = (bank: string, memories: Body): MemoryInput[] =>
  memories.map(({ id, text, meta }) =>
    meta === undefined ? { id, bank, text } : { id, bank, text, meta },
  );

const errors = errorResponses({ keyed: true, params: true });
const bodyErrors = errorResponses({ keyed: true, params: true, body: true });

/**
 * Add, update, get, list and delete memories of a bank; writes go through `writes` (tracked
 * for shutdown and health), with bodies up to `bodyLimit` bytes.
 */
export function memoryRoutes(
  app: App,
  store: MemoryStore,
  writes: StoreWrites,
  bodyLimit: number,
): void {
  app.post(
    '/v1/banks/:bank/memories',
    {
      schema: {
        summary: 'Add memories (atomic; 200 once durable)',
        params: bankParams,
        body: addBodySchema,
        response: { 200: addResponseSchema, ...bodyErrors },
      },
      bodyLimit,
    },
    async (request) => {
      const { bank } = request.params;
      reachBank(request, store, bank, { write: true });
      const { ids } = await writes.add(inputs(bank, request.body.memories));
      return { ids };
    },
  );

  app.put(
    '/v1/banks/:bank/memories',
    {
      schema: {
        summary: 'Replace existing memories: text, metadata, vectors (atomic; 200 once durable)',
        params: bankParams,
        body: addBodySchema,
        response: { 200: addResponseSchema, ...bodyErrors },
      },
      bodyLimit,
    },
    async (request) => {
      const { bank } = request.params;
      reachBank(request, store, bank, { write: true, exists: true });
      const { ids } = await writes.update(inputs(bank, request.body.memories));
      return { ids };
    },
  );

  app.get(
    '/v1/banks/:bank/memories',
    {
      schema: {
        summary: 'A page of the bank’s memories in write order',
        params: bankParams,
        querystring: listQuerySchema,
        response: { 200: listResponseSchema, ...errors },
      },
    },
    async (request) => {
      const { bank } = request.params;
      reachBank(request, store, bank, { exists: true });
      const { offset, limit } = request.query;
      const page = store.list(bank, { offset, limit });
      return { items: page.items, total: page.total, offset, limit };
    },
  );

  app.get(
    '/v1/banks/:bank/memories/:id',
    {
      schema: {
        summary: 'One memory',
        params: memoryParams,
        response: { 200: memorySchema, ...errors },
      },
    },
    async (request) => {
      const { bank, id } = request.params;
      reachBank(request, store, bank, { exists: true });
      const memory = store.get(bank, id);
      if (memory === undefined)
        throw new HttpError(404, 'NOT_FOUND', `no memory '${id}' in bank '${bank}'`);
      return memory;
    },
  );

  app.delete(
    '/v1/banks/:bank/memories/:id',
    {
      schema: {
        summary: 'Delete one memory (200 once durable)',
        params: memoryParams,
        response: { 200: deleteResponseSchema, ...errors },
      },
    },
    async (request) => {
      const { bank, id } = request.params;
      reachBank(request, store, bank, { write: true, exists: true });
      const { deleted } = await writes.delete([id], bank);
      if (deleted.length === 0)
        throw new HttpError(404, 'NOT_FOUND', `no memory '${id}' in bank '${bank}'`);
      return { deleted };
    },
  );
}
