import SwaggerParser from '@apidevtools/swagger-parser';
import { describe, expect, it } from 'vitest';
import { liveServer, send } from './testing/live.js';

const every = ['403', '500', '503'];
const keyed = [...every, '401', '429'];
const params = [...keyed, '400', '404', '414'];
const body = [...params, '413', '415'];

describe('/openapi.json', () => {
  it('lists every status a route can answer, each error with the one error body', async () => {
    const server = await liveServer();
    try {
      const doc = (await send(server.port, '/openapi.json')).json();
      await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeDefined();
      const expected: Record<string, string[]> = {
        'GET /healthz': ['200', ...every],
        'GET /readyz': ['200', ...every],
        'GET /openapi.json': ['200', ...every],
        'GET /metrics': ['200', ...keyed],
        'GET /v1/banks': ['200', ...keyed],
        'POST /v1/banks/{bank}/memories': ['200', ...body],
        'PUT /v1/banks/{bank}/memories': ['200', ...body],
        'GET /v1/banks/{bank}/memories': ['200', ...params],
        'GET /v1/banks/{bank}/memories/{id}': ['200', ...params],
        'DELETE /v1/banks/{bank}/memories/{id}': ['200', ...params],
        'POST /v1/banks/{bank}/search': ['200', ...body],
      };
      const paths = doc.paths as Record<string, Record<string, { responses: object }>>;
      const found = Object.fromEntries(
        Object.entries(paths).flatMap(([path, item]) =>
          Object.entries(item).map(([method, op]) => [
            `${method.toUpperCase()} ${path}`,
            Object.keys(op.responses).sort(),
          ]),
        ),
      );
      expect(found).toEqual(
        Object.fromEntries(Object.entries(expected).map(([op, s]) => [op, [...new Set(s)].sort()])),
      );
      const errorRef = JSON.stringify({ $ref: '#/components/schemas/Error' });
      type Response = { content: Record<string, { schema: unknown }> };
      for (const [path, item] of Object.entries(paths))
        for (const [method, op] of Object.entries(item))
          for (const [status, response] of Object.entries(op.responses as Record<string, Response>))
            // /healthz and /readyz answer 503 with their checks (or, while closing, the error).
            if (Number(status) >= 400 && !(/^\/(healthz|readyz)$/.test(path) && status === '503'))
              expect(
                JSON.stringify(Object.values(response.content)[0]!.schema),
                `${method} ${path} ${status}`,
              ).toBe(errorRef);
    } finally {
      await server.close();
    }
  });
});
