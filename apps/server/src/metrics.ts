import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MemoryStore } from '@bfe/store';
import type { Grant } from './keys.js';

/** The service's Prometheus metrics, on registries of its own (one set per server instance). */
export interface ServerMetrics {
  /** Store-wide: every route, store totals, refusals, failures and the process. */
  readonly registry: Registry;
  /** Per bank: each series labelled `bank`, shown to a tenant key for its own banks. */
  readonly banks: Registry;
  /**
   * Records one answered request: its route pattern (not its URL), method and status, and
   * under `bank` when the request named one (see {@link bankOfRequest}).
   */
  observe(
    route: string,
    method: string,
    status: number,
    seconds: number,
    bank: string | undefined,
  ): void;
  /** A request refused for a key's rate or concurrency limit. */
  rejected(reason: 'rate' | 'concurrency'): void;
  /** A write the disk refused (its storage code: STORAGE_FULL, STORAGE_DENIED, STORAGE_IO). */
  persistenceFailed(code: string): void;
  /** A request Node's HTTP parser turned down before routing (its answer's code). */
  clientError(code: string): void;
  /** The Prometheus text a grant may read: everything for admin, its banks' series else. */
  render(grant: Grant): Promise<string>;
}

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * Request counts and latency histograms per route and status, store totals (memories and
 * tokens), refusals and failures, Node's default process metrics — all store-wide, for an
 * admin key (or the loopback user) — and the same request series per bank, of which a tenant
 * key reads its own banks' only.
 */
export function createMetrics(store: MemoryStore): ServerMetrics {
  const registry = new Registry();
  const banks = new Registry();
  collectDefaultMetrics({ register: registry });
  const labelNames = ['route', 'method', 'status'] as const;
  const requests = new Counter({
    name: 'bfe_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'bfe_http_request_duration_seconds',
    help: 'HTTP request latency, by route pattern, method and status',
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  const bankLabels = ['bank', 'route', 'method', 'status'] as const;
  const bankRequests = new Counter({
    name: 'bfe_bank_requests_total',
    help: 'HTTP requests answered for a bank, by route pattern, method and status',
    labelNames: bankLabels,
    registers: [banks],
  });
  const bankLatency = new Histogram({
    name: 'bfe_bank_request_duration_seconds',
    help: 'HTTP request latency for a bank, by route pattern, method and status',
    labelNames: bankLabels,
    buckets: BUCKETS,
    registers: [banks],
  });
  const rejections = new Counter({
    name: 'bfe_http_rejected_total',
    help: 'Requests refused with 429, by the limit they hit (rate, concurrency)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const failures = new Counter({
    name: 'bfe_store_write_failures_total',
    help: 'Writes the disk refused, by storage code (none was acknowledged)',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  const clientErrors = new Counter({
    name: 'bfe_http_client_errors_total',
    help: 'Requests Node turned down before routing (malformed, headers too large, too slow)',
    labelNames: ['code'] as const,
    registers: [registry],
  });
  let cached: Promise<{ memories: number; tokens: number }> | undefined;
  const totals = (): Promise<{ memories: number; tokens: number }> => {
    // One stats() per scrape for both gauges.
    cached ??= store
      .stats()
      .then((s) => ({ memories: s.memories, tokens: s.tokens }))
      .finally(() => setImmediate(() => (cached = undefined)));
    return cached;
  };
  new Gauge({
    name: 'bfe_store_memories',
    help: 'Live memories in the store',
    registers: [registry],
    async collect() {
      this.set((await totals()).memories);
    },
  });
  new Gauge({
    name: 'bfe_store_tokens',
    help: 'Content tokens of the live memories in the store',
    registers: [registry],
    async collect() {
      this.set((await totals()).tokens);
    },
  });
  return {
    registry,
    banks,
    observe(route, method, status, seconds, bank) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
      if (bank === undefined) return;
      bankRequests.inc({ bank, ...labels });
      bankLatency.observe({ bank, ...labels }, seconds);
    },
    rejected: (reason) => rejections.inc({ reason }),
    persistenceFailed: (code) => failures.inc({ code }),
    clientError: (code) => clientErrors.inc({ code }),
    async render(grant) {
      if (grant.admin) return (await registry.metrics()) + (await banks.metrics());
      const own = grant.banks;
      return renderBanks(banks, own === 'all' ? () => true : (b) => own.has(b));
    },
  };
}

/**
 * The bank whose traffic a request is: its `:bank` parameter when the grant sees that bank
 * and, for a grant of every bank (loopback), when the answer was not an error — so the label
 * only ever holds a keys file's banks or banks that exist, never a name a client made up.
 */
export function bankOfRequest(
  params: unknown,
  grant: Grant | null,
  status: number,
): string | undefined {
  const bank = (params as { bank?: unknown } | undefined)?.bank;
  if (typeof bank !== 'string' || grant === null) return undefined;
  if (grant.banks === 'all') return status < 400 ? bank : undefined;
  return grant.banks.has(bank) ? bank : undefined;
}

const escapeLabel = (v: string): string =>
  v.replaceAll('\\', '\\\\').replaceAll('\n', '\\n').replaceAll('"', '\\"');

/** The text exposition of `registry`'s series whose `bank` label passes `keep`. */
async function renderBanks(registry: Registry, keep: (bank: string) => boolean): Promise<string> {
  let text = '';
  for (const metric of await registry.getMetricsAsJSON()) {
    text += `# HELP ${metric.name} ${metric.help}\n# TYPE ${metric.name} ${metric.type}\n`;
    for (const v of metric.values) {
      const labels = v.labels as Record<string, string | number>;
      if (!keep(String(labels.bank))) continue;
      const pairs = Object.entries(labels).map(([k, l]) => `${k}="${escapeLabel(String(l))}"`);
      const name = (v as { metricName?: string }).metricName ?? metric.name;
      text += `${name}{${pairs.join(',')}} ${v.value}\n`;
    }
  }
  return text;
}
