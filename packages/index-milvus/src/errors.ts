/** Why a Milvus request failed, as a caller acts on it. */
export type MilvusErrorCode =
  /** The server refused the request (a bad filter, a missing collection…). */
  | 'milvus-request'
  /** The server did not answer (down, restarting, unreachable, timed out): retry later. */
  | 'milvus-unavailable'
  /** The token was refused (wrong user or password, or a user without the rights). */
  | 'milvus-auth'
  /** The TLS handshake failed (an untrusted certificate, a name mismatch, TLS on one side only). */
  | 'milvus-tls';

/** A failed Milvus request: a stable `code`, whether a retry can succeed, and what to do. */
export class MilvusRequestError extends Error {
  readonly code: MilvusErrorCode;
  /** True when the same request can succeed later unchanged (the server was away). */
  readonly retryable: boolean;
  readonly suggestion: string | undefined;

  constructor(
    what: string,
    reason: string,
    options: {
      code?: MilvusErrorCode;
      retryable?: boolean;
      suggestion?: string;
      cause?: unknown;
    } = {},
  ) {
    super(
      `Milvus ${what} failed: ${reason}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'MilvusRequestError';
    this.code = options.code ?? 'milvus-request';
    this.retryable = options.retryable ?? false;
    this.suggestion = options.suggestion;
  }
}

interface GrpcError {
  readonly code?: unknown;
  readonly details?: unknown;
  readonly message?: unknown;
}

const TLS = /ssl|tls|certificate|handshake|wrong version number|self.signed|alpn/i;

/**
 * A thrown gRPC or SDK error as a {@link MilvusRequestError}: UNAUTHENTICATED (16) or
 * PERMISSION_DENIED (7) → `milvus-auth`; a TLS failure → `milvus-tls`; UNAVAILABLE (14),
 * DEADLINE_EXCEEDED (4), a refused or reset connection → `milvus-unavailable` (retryable).
 * Anything else is returned unchanged.
 */
export function classifyError(what: string, address: string, error: unknown): unknown {
  if (error instanceof MilvusRequestError) return error;
  const e = (typeof error === 'object' && error !== null ? error : {}) as GrpcError;
  const text = `${typeof e.details === 'string' ? e.details : ''} ${
    typeof e.message === 'string' ? e.message : String(error)
  }`;
  const reason = (typeof e.details === 'string' && e.details !== '' ? e.details : text).trim();
  if (e.code === 16 || e.code === 7 || /auth check failure|unauthenticated/i.test(text)) {
    return new MilvusRequestError(what, `${address} refused the credentials: ${reason}`, {
      code: 'milvus-auth',
      suggestion:
        'set the token (user:password) in the options or BFE_MILVUS_TOKEN; the user needs the grants in packages/index-milvus/README.md',
      cause: error,
    });
  }
  if (TLS.test(text)) {
    return new MilvusRequestError(what, `TLS to ${address} failed: ${reason}`, {
      code: 'milvus-tls',
      suggestion:
        'give the CA that signed the server certificate (caPem, ?ca=FILE) and an https:// address, or a plain milvus:// address for a server without TLS',
      cause: error,
    });
  }
  if (
    e.code === 14 ||
    e.code === 4 ||
    /ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENOTFOUND|No connection established|deadline/i.test(text)
  ) {
    return new MilvusRequestError(what, `${address} is unavailable: ${reason}`, {
      code: 'milvus-unavailable',
      retryable: true,
      suggestion: 'check that the Milvus server runs and listens at that address, then retry',
      cause: error,
    });
  }
  return error;
}

/** A Milvus response status (top level or under `status`). */
export interface Status {
  readonly error_code?: string | number;
  readonly code?: number;
  readonly reason?: string;
  readonly retriable?: boolean;
}

/** `res` when its status is Success; else the status as a {@link MilvusRequestError}. */
export function checkStatus<T extends { status?: Status } | Status>(what: string, res: T): T {
  const s: Status = 'status' in res && res.status !== undefined ? res.status : (res as Status);
  const ok = (s.error_code === undefined || s.error_code === 'Success') && (s.code ?? 0) === 0;
  if (ok) return res;
  const reason = s.reason ?? String(s.error_code);
  if (s.error_code === 'PermissionDenied' || /privilege|permission denied/i.test(reason)) {
    throw new MilvusRequestError(what, reason, {
      code: 'milvus-auth',
      suggestion: 'grant the user the privileges in packages/index-milvus/README.md',
    });
  }
  // A server that has just (re)started answers before its query nodes hold the collection.
  if (s.retriable === true || NOT_READY.test(reason)) {
    throw new MilvusRequestError(what, `the server is not ready: ${reason}`, {
      code: 'milvus-unavailable',
      retryable: true,
      suggestion: 'retry once the server has loaded the collection',
    });
  }
  throw new MilvusRequestError(what, reason);
}

const NOT_READY =
  /not loaded|not ready|no available|not available|unavailable|not healthy|stopping|recover|initializ|timeout/i;
