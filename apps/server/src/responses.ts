import { errorSchema } from './schemas.js';

/**
 * The error statuses a route can answer, for its response schema (and so `/openapi.json`),
 * each with the one error body. Every route can answer 403 (a `Host` or `Origin` that is not
 * this server's, without a keys file; a non-loopback peer), 500 and 503 (shutting down, or the
 * disk refused a write); `keyed` routes 401 and 429 (a key's rate or concurrency limit, with
 * `Retry-After`); `body` routes 400, 413 and 415; `params` routes 400, 404 and 414.
 * @example
 * errorResponses({ keyed: true, params: true }); // { 400, 401, 403, 404, 414, 429, 500, 503 }
 */
export function errorResponses(
  what: { readonly keyed?: boolean; readonly body?: boolean; readonly params?: boolean } = {},
): Record<number, typeof errorSchema> {
  const statuses = [403, 500, 503];
  if (what.keyed === true) statuses.push(401, 429);
  if (what.body === true) statuses.push(400, 413, 415);
  if (what.params === true) statuses.push(400, 404, 414);
  return Object.fromEntries([...new Set(statuses)].sort().map((s) => [s, errorSchema]));
}
