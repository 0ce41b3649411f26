export { buildServer, bodyLimitFor } from './app.js';
export type { ServerOptions } from './app.js';
export { defaultEncodeWorkers, serve } from './serve.js';
export type { RunningServer, ServeOptions } from './serve.js';
export { runServeCli } from './cli.js';
export { MCP_MAX_K, MCP_SERVER_INFO, mcpServer } from './mcp/tools.js';
export type { McpContext } from './mcp/tools.js';
export { mcpRoutes } from './mcp/http.js';
export { runMcpCli } from './mcp/stdio.js';
export { canSee, isLoopback, keysPolicy, loadKeysFile, loopbackPolicy } from './keys.js';
export type { AccessPolicy, Denial, Grant } from './keys.js';
export { HttpError, toHttp } from './http-errors.js';
export { createMetrics } from './metrics.js';
export type { ServerMetrics } from './metrics.js';
export {
  MAX_BATCH,
  MAX_K,
  MAX_PAGE,
  addBodySchema,
  errorSchema,
  keysFileSchema,
  searchBodySchema,
  searchResponseSchema,
} from './schemas.js';
export type { KeysFile } from './schemas.js';
