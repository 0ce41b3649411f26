import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { BfeError, ConfigError, DataError, StorageError } from '@bfe/core';
import { MemoryInputError, StoreLockedError } from '@bfe/store';

/**
 * An error with an HTTP status and a stable code: the body is `{ error: { code, message } }`;
 * `headers` go with it (e.g. `Retry-After`).
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/**
 * The one body every visible-nothing answer gets: a bank the key does not list and a bank the
 * store does not hold are indistinguishable (no existence leak).
 */
export const noBank = (bank: string): HttpError =>
  new HttpError(404, 'NOT_FOUND', `no bank '${bank}'`);

/** Fastify's own client errors, by code, with the status and code this service answers. */
const FASTIFY_CODES: Readonly<Record<string, readonly [number, string]>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'BODY_TOO_LARGE'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'UNSUPPORTED_MEDIA_TYPE'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'BAD_REQUEST'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'MALFORMED_JSON'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'MALFORMED_JSON'],
  FST_ERR_BAD_URL: [400, 'BAD_REQUEST'],
  FST_ERR_MAX_PARAM_LENGTH: [414, 'URI_TOO_LONG'],
};

/** The answer to a request Fastify turned down before routing it (a bad or over-long URL). */
const ROUTING_MESSAGES: Readonly<Record<string, string>> = {
  FST_ERR_BAD_URL: 'the URL holds a malformed percent-encoding',
  FST_ERR_MAX_PARAM_LENGTH: 'a path segment is longer than any bank name or memory id',
};

/** Maps an error to its status and body; 5xx messages stay generic (details go to the log). */
export function toHttp(error: unknown): { status: number; code: string; message: string } {
  if (error instanceof HttpError)
    return { status: error.status, code: error.code, message: error.message };
  if (hasZodFastifySchemaValidationErrors(error)) {
    const fe = error as FastifyError;
    const issues = (fe.validation ?? []).map((v) => {
      const where = `${fe.validationContext ?? 'body'}${v.instancePath.replaceAll('/', '.')}`;
      return `${where}: ${v.message ?? 'invalid'}`;
    });
    return { status: 400, code: 'BAD_REQUEST', message: issues.join('; ') };
  }
  if (error instanceof MemoryInputError)
    return { status: 400, code: 'INVALID_MEMORIES', message: error.message };
  if (error instanceof StoreLockedError)
    return { status: 503, code: 'UNAVAILABLE', message: error.message };
  // The disk refused a write (full, read-only, failing): nothing was acknowledged; the store
  // is not the client's fault and may recover, so 503 with the storage code.
  if (error instanceof StorageError)
    return { status: 503, code: error.code, message: 'the store could not write to its disk' };
  if (error instanceof ConfigError || error instanceof DataError)
    return { status: 400, code: 'BAD_REQUEST', message: error.message };
  if (error instanceof BfeError)
    return { status: 500, code: 'INTERNAL', message: 'internal error' };
  const fe = error as Partial<FastifyError>;
  const known = fe.code === undefined ? undefined : FASTIFY_CODES[fe.code];
  if (known?.[0] === 415)
    return {
      status: 415,
      code: known[1],
      message: 'bodies are JSON: send Content-Type: application/json',
    };
  if (known !== undefined)
    return {
      status: known[0],
      code: known[1],
      message: ROUTING_MESSAGES[fe.code!] ?? fe.message ?? '',
    };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)
    return { status: fe.statusCode, code: 'BAD_REQUEST', message: fe.message ?? 'bad request' };
  return { status: 500, code: 'INTERNAL', message: 'internal error' };
}

/**
 * Fastify error handler (also its `frameworkErrors`, for a URL it cannot route): `{ error:
 * { code, message } }`, server errors logged.
 */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { status, code, message } = toHttp(error);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  if (error instanceof HttpError) void reply.headers(error.headers);
  void reply.status(status).send({ error: { code, message } });
}

/**
 * Node's HTTP parser turned a request down before Fastify saw it (malformed, headers too
 * large, too slow): the same body shape, written on the socket, which is then closed.
 * Returns the code written, or undefined when the socket was gone.
 */
export function clientErrorResponse(
  error: NodeJS.ErrnoException,
  socket: Socket,
): string | undefined {
  if (error.code === 'ECONNRESET' || socket.destroyed) return undefined;
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'the request headers are over the size limit']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'REQUEST_TIMEOUT', 'the request did not arrive in time']
        : [400, 'BAD_REQUEST', 'malformed HTTP request'];
  const body = JSON.stringify({ error: { code, message } });
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy();
  return code;
}
