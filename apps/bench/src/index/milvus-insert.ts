/**
 * `pnpm bench:big-bank --milvus-insert`: how fast the Node SDK loads token rows into Milvus
 * Lite, by insert batch size and requests in flight. For each `BATCHxCONCURRENCY` of
 * `--milvus-insert-configs` (default `8192x1,32768x1,8192x2,4096x4`; the first is the
 * `TokenCollection` default and the peer of the ratios): a fresh `milvus-lite server`, the first
 * `--milvus-insert-tokens` tokens of the tiled bank (memories of 20 tokens, one bank) inserted
 * through `TokenCollection.insert` (each request one batch; CONCURRENCY requests in flight),
 * then `flush`. Prints wall seconds (insert, flush), rows/s, the Node process's CPU seconds and
 * the ratio of each config's insert+flush wall time to the first's.
 *
 * Lite 3.2.2 has no Import RPC, so the SDK's `bulkInsert` (files on object storage) is not a
 * path here; Lite turns each insert's columns into per-row Python lists (`records.py`).
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cpuUsage } from 'node:process';
import { TokenCollection, type MemoryRows } from '@bfe/index-milvus';
import { startMilvusLite } from '@bfe/index-milvus/testing';
import { loadavg, readF32, readMeta } from './scale.js';

type Values = Record<string, string | boolean | undefined>;

export async function runMilvusInsertBench(v: Values): Promise<void> {
  const dir = String(v.index);
  const meta = readMeta(dir);
  const dim = meta.dim;
  const n = Number(v['milvus-insert-tokens'] ?? 30_000);
  const configs = String(v['milvus-insert-configs'] ?? '8192x1,32768x1,8192x2,4096x4').split(',');
  const x = readF32(join(dir, 'vectors.f32'), n * dim);
  const size = meta.memoryTokens;
  const memories: MemoryRows[] = Array.from({ length: Math.ceil(n / size) }, (_, m) => ({
    id: `m${m}`,
    seq: 1,
    vectors: x.subarray(m * size * dim, Math.min(n, (m + 1) * size) * dim),
  }));
  const lines: Record<string, number | string>[] = [];
  for (const config of configs) {
    const [batch, concurrency] = config.split('x').map(Number) as [number, number];
    const data = join(String(v['milvus-data']), `insert-${config}`);
    rmSync(data, { recursive: true, force: true });
    mkdirSync(data, { recursive: true });
    const lite = await startMilvusLite({ dataDir: data });
    try {
      const c = await TokenCollection.open(
        { address: lite.address, insertBatch: batch, timeoutMs: 3_600_000 },
        dim,
      );
      const per = Math.max(1, Math.floor(batch / size));
      const groups: MemoryRows[][] = [];
      for (let i = 0; i < memories.length; i += per) groups.push(memories.slice(i, i + per));
      const cpu0 = cpuUsage();
      const t0 = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < groups.length) await c.insert('tiled', groups[next++]!);
        }),
      );
      const insertS = (performance.now() - t0) / 1000;
      const cpu = cpuUsage(cpu0);
      const t1 = performance.now();
      await c.flush();
      const flushS = (performance.now() - t1) / 1000;
      const rows = await c.count();
      if (rows !== n) throw new Error(`${config}: ${rows} rows in the collection, not ${n}`);
      const line = {
        config,
        tokens: n,
        insertS,
        flushS,
        rowsPerS: n / (insertS + flushS),
        nodeCpuS: (cpu.user + cpu.system) / 1e6,
        ratio:
          (insertS + flushS) / (lines.length === 0 ? insertS + flushS : Number(lines[0]!.wallS)),
        wallS: insertS + flushS,
        load: loadavg(),
      };
      lines.push(line);
      process.stderr.write(`${JSON.stringify(line)}\n`);
      await c.close();
    } finally {
      await lite.stop();
      rmSync(data, { recursive: true, force: true });
    }
  }
  process.stdout.write(
    '| batch × in flight | tokens | insert s | flush s | rows/s | Node CPU s | wall vs first | load |\n',
  );
  process.stdout.write('| --- | --- | --- | --- | --- | --- | --- | --- |\n');
  for (const l of lines) {
    const f = (k: string, d = 1): string => Number(l[k]).toFixed(d);
    process.stdout.write(
      `| ${String(l.config)} | ${l.tokens} | ${f('insertS')} | ${f('flushS')} | ${f('rowsPerS', 0)} | ${f('nodeCpuS')} | ${f('ratio', 2)} | ${String(l.load)} |\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(lines)}\n`);
}
