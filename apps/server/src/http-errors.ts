import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { BfeError, ConfigError, DataError } from '@bfe/core';
import { MemoryInputError, StoreLockedError } from '@bfe/store';

/** An error with an HTTP status and a stable code: the body is `{ error: { code, message } }`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
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
  if (known !== undefined) return { status: known[0], code: known[1], message: fe.message ?? '' };
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500)
    return { status: fe.statusCode, code: 'BAD_REQUEST', message: fe.message ?? 'bad request' };
  return { status: 500, code: 'INTERNAL', message: 'internal error' };
}

/** Fastify error handler: `{ error: { code, message } }`, server errors logged. */
export function errorHandler(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const { status, code, message } = toHttp(error);
  if (status >= 500) request.log.error({ err: error }, 'request failed');
  void reply.status(status).send({ error: { code, message } });
}
