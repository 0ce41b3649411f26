import { isIP } from 'node:net';
import { HttpError } from './http-errors.js';

/**
 * The host part of a `Host` header or an origin's authority, lower-cased, without the port
 * and without an IPv6 literal's brackets; undefined when it is not a plain host.
 */
export function hostOf(authority: string): string | undefined {
  const a = authority.trim().toLowerCase();
  if (isIP(a) === 6) return a; // a bare IPv6 address (a --host or --allowed-hosts value)
  if (a.startsWith('[')) {
    const end = a.indexOf(']');
    if (end < 0 || !/^(:\d*)?$/.test(a.slice(end + 1))) return undefined;
    const ip = a.slice(1, end);
    return isIP(ip) === 6 ? ip : undefined;
  }
  const colon = a.lastIndexOf(':');
  const host = colon < 0 ? a : a.slice(0, colon);
  if (colon >= 0 && !/^\d*$/.test(a.slice(colon + 1))) return undefined;
  return /^[a-z0-9.-]+$/.test(host) ? host.replace(/\.$/, '') : undefined;
}

/** Names that can only mean this machine: `localhost`, 127.0.0.0/8 and `::1`. */
function isLoopbackName(host: string): boolean {
  if (host === 'localhost' || host === '::1') return true;
  return isIP(host) === 4 && host.startsWith('127.');
}

/**
 * Checks the `Host` header (and `Origin`, when a browser sent one) of a server without a keys
 * file. Its peers are loopback connections, but a web page the user opens can reach it too: by
 * DNS rebinding (a name of the page's own that resolves to 127.0.0.1, so `Host` carries that
 * name) or by a cross-site request (`Origin` names the page). Only loopback names, the
 * address the server listens on and the configured `allowedHosts` pass.
 * @example
 * const guard = hostGuard(['memories.internal']);
 * guard('127.0.0.1:8080', undefined); // passes
 * guard('evil.example:8080', undefined); // throws HttpError 403 HOST_NOT_ALLOWED
 */
export function hostGuard(
  allowedHosts: readonly string[],
): (host: string | undefined, origin: string | undefined) => void {
  const allowed = new Set(
    allowedHosts.map((h) => hostOf(h)).filter((h): h is string => h !== undefined),
  );
  const ok = (host: string | undefined): boolean =>
    host !== undefined && (isLoopbackName(host) || allowed.has(host));
  return (host, origin) => {
    if (!ok(host === undefined ? undefined : hostOf(host)))
      throw new HttpError(
        403,
        'HOST_NOT_ALLOWED',
        `Host '${host ?? ''}' is not this server's: without a keys file it answers requests ` +
          'for localhost, 127.0.0.1, [::1] and its --allowed-hosts only',
      );
    if (origin === undefined) return;
    let originHost: string | undefined;
    try {
      const url = new URL(origin);
      if (url.protocol === 'http:' || url.protocol === 'https:') originHost = hostOf(url.host);
    } catch {
      originHost = undefined;
    }
    if (!ok(originHost))
      throw new HttpError(
        403,
        'ORIGIN_NOT_ALLOWED',
        `Origin '${origin}' may not call this server: without a keys file only pages it serves ` +
          '(or of its --allowed-hosts) may',
      );
  };
}
