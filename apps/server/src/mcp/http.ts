import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { MemoryStore } from '@bfe/store';
import type { App } from '../access.js';
import type { StoreWrites } from '../writes.js';
import { mcpServer } from './tools.js';

/** JSON-RPC's answer to GET and DELETE: this endpoint keeps no sessions and no streams. */
const NOT_ALLOWED = JSON.stringify({
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Method not allowed: POST JSON-RPC messages to /mcp' },
  id: null,
});

/**
 * `/mcp`: the MCP tools over Streamable HTTP, stateless (each POST gets a fresh server and
 * transport, answered with JSON, no session or stream to keep), behind the same hooks as every
 * route — the `Host`/`Origin` guard without a keys file, the key (401 before any MCP message is
 * read), its rate and concurrency limits — and acting under the key's grant: its banks, and the
 * write tools only for a key that may write. Bodies up to `sizes.body` bytes (an add's);
 * answers up to `sizes.response`, the service's response limit (checked by the search tool: the
 * transport writes its response itself, past the hooks' check).
 */
export function mcpRoutes(
  app: App,
  store: MemoryStore,
  writes: StoreWrites,
  sizes: { readonly body: number; readonly response: number },
): void {
  app.post('/mcp', { bodyLimit: sizes.body, schema: { hide: true } }, async (request, reply) => {
    const server = mcpServer({
      store,
      writes,
      grant: request.grant,
      maxResponseBytes: sizes.response,
      onInternalError: (error) => request.log.error({ err: error }, 'MCP tool failed'),
    });
    // No `sessionIdGenerator`: stateless, no session id issued or checked.
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    // The transport writes the raw response; the hooks' slot is freed when it closes.
    void reply.hijack();
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  });
  for (const method of ['GET', 'DELETE'] as const)
    app.route({
      method,
      url: '/mcp',
      schema: { hide: true },
      handler: async (_request, reply) =>
        reply.status(405).header('allow', 'POST').type('application/json').send(NOT_ALLOWED),
    });
}
