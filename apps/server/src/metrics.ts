import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MemoryStore } from '@bfe/store';

/** The service's Prometheus metrics, on a registry of its own (one per server instance). */
export interface ServerMetrics {
  readonly registry: Registry;
  /** Records one answered request: its route pattern (not its URL), method and status. */
  observe(route: string, method: string, status: number, seconds: number): void;
}

/**
 * Request counts and latency histograms per route and status, store totals (memories and
 * tokens: totals only, so no tenant's bank names or sizes show), and Node's default process
 * metrics.
 */
export function createMetrics(store: MemoryStore): ServerMetrics {
  const registry = new Registry();
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
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
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
    observe(route, method, status, seconds) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
  };
}
