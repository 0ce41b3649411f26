import { existsSync, mkdirSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import { RelevanceLabels } from '@bfe/core';
import { buildResults, evaluate } from '@bfe/eval';
import type { EvaluateInput, Evaluation } from '@bfe/eval';
// The runner's package index does not export the report yet; import its module directly.
import { reportInputSchema, writeReport } from '../apps/runner/src/report/index.ts';
import type { ReportInput } from '../apps/runner/src/report/index.ts';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = process.env.BFE_SKIP_BROWSER === '1';
const SUBTASKS = ['multi-hop', 'temporal', 'open-domain', 'single-hop'];
/** Noise per system: larger is a worse ranking (pooled is the baseline). */
const SYSTEMS: [string, number][] = [
  ['pooled', 4.5],
  ['maxsim', 3.8],
  ['bm25', 5.2],
  ['sparse-fusion', 3.0],
  ['adapted', 2.9],
  ['zero-floor', 3.3],
  ['no-fusion', 3.6],
];
const CHART_IDS = [
  'chart-headline',
  'chart-delta',
  'chart-subtasks',
  'chart-k-sweep',
  'chart-adapter',
];

/** mulberry32: a small seeded generator, so the fixture is the same on every run. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * 240 queries over 4 LoCoMo-like subtasks, 40 candidates each, 1–4 relevant; every system ranks
 * by relevance + uniform noise of its own scale, so better systems have smaller noise.
 */
function benchmark() {
  const rand = random(7);
  const labels = new RelevanceLabels();
  const candidates = new Map<string, Set<string>>();
  const subtaskOf = new Map<string, string>();
  const noise = new Map<string, Map<string, number>>();
  for (let q = 0; q < 240; q++) {
    const id = `q${q}`;
    subtaskOf.set(id, SUBTASKS[q % SUBTASKS.length] as string);
    const ids = Array.from({ length: 40 }, (_, i) => `${id}:m${i}`);
    candidates.set(id, new Set(ids));
    const nRelevant = 1 + Math.floor(rand() * 4);
    for (let r = 0; r < nRelevant; r++) labels.add(id, ids[Math.floor(rand() * 40)] as string);
    noise.set(id, new Map(ids.map((m) => [m, rand()])));
  }
  /** An evaluation whose rankings use noise scale `scale` (and a per-system jitter `salt`). */
  const run = (scale: number, salt: number): Evaluation => {
    const jitter = random(salt);
    const runs = new Map<string, string[]>();
    for (const [id, set] of candidates) {
      const base = noise.get(id) as Map<string, number>;
      const relevant = labels.relevant(id);
      const scored = [...set].map((m) => ({
        m,
        s: (relevant.has(m) ? 1 : 0) + scale * (0.5 * (base.get(m) as number) + 0.5 * jitter()),
      }));
      scored.sort((a, b) => b.s - a.s || (a.m < b.m ? -1 : 1));
      runs.set(
        id,
        scored.map((d) => d.m),
      );
    }
    const input: EvaluateInput = {
      runs,
      labels,
      candidates,
      subtaskOf,
      subtasks: SUBTASKS,
      ks: [10],
    };
    return evaluate(input);
  };
  return { run };
}

function fixture(): ReportInput {
  const { run } = benchmark();
  const systems = SYSTEMS.map(([name, scale], i) => ({ name, evaluation: run(scale, 100 + i) }));
  const results = buildResults({
    dataset: 'locomo',
    split: 'test',
    systems,
    compareTo: ['pooled'],
    resamples: 1000,
    seed: 42,
    meta: { model: 'sentence-transformers/all-MiniLM-L6-v2', alpha: 0.5, k: 64 },
  });
  const ks = [16, 32, 64, 128];
  const kSweep = ks.flatMap((k, i) =>
    (
      [
        ['sparse-fusion', 3.4],
        ['zero-floor', 3.9],
        ['no-fusion', 3.7],
      ] as const
    ).map(([system, scale], j) => ({
      k,
      system,
      metrics: { ...run(scale - 0.15 * i, 200 + 10 * i + j).metrics },
    })),
  );
  const rand = random(11);
  const seeds = [42, 43, 44].map((seed) => {
    const steps = Array.from({ length: 90 }, (_, step) => ({
      step,
      loss: 1.2 + 1.4 * Math.exp(-step / 25) + 0.08 * (rand() - 0.5) + (seed - 42) * 0.01,
    }));
    const mean = (from: number, to: number) =>
      steps.slice(from, to).reduce((sum, s) => sum + s.loss, 0) / (to - from);
    return {
      seed,
      steps,
      epochs: [
        { epoch: 0, loss: 2.6, validationNdcg10: 0.3012 },
        { epoch: 1, loss: mean(0, 45), validationNdcg10: 0.3141 },
        { epoch: 2, loss: mean(45, 90), validationNdcg10: 0.3127 },
      ],
    };
  });
  return reportInputSchema.parse({
    experiment: 'locomo-minilm-fusion',
    runId: '2025-01-07T10-00-00Z-3f2a',
    dataset: 'locomo',
    split: {
      name: 'test',
      policy: 'connected-bank',
      hash: 'c0ffee'.repeat(10) + 'c0ff',
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    },
    results,
    kSweep,
    adapter: { seeds, selected: { epoch: 1, alpha: 0.5 } },
    receipt: {
      model: 'sentence-transformers/all-MiniLM-L6-v2',
      datasetSha256: 'ab'.repeat(32),
      commit: '16bac8d0',
      dirty: false,
      stages: [
        { name: 'data', seconds: 0.4, cached: true },
        { name: 'encode', seconds: 312.4, cached: true },
        { name: 'train-adapter', seconds: 95.2, cached: false },
        { name: 'score', seconds: 41.25, cached: false },
      ],
      peakRssBytes: 1_811_939_328,
    },
  });
}

/** Where the screenshot goes: `BFE_TEST_ARTIFACTS`, else `test-artifacts/` in the OS temp dir. */
function artifactsDir(): string {
  const dir = process.env.BFE_TEST_ARTIFACTS
    ? resolve(process.env.BFE_TEST_ARTIFACTS)
    : join(tmpdir(), 'test-artifacts');
  mkdirSync(dir, { recursive: true });
  return dir;
}

describe('report.html in headless Chromium', () => {
  const tmp = (): string => tmpDir('bfe-report-');

  it.skipIf(SKIP)(
    'renders every chart offline, with no console or page errors',
    async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} not found: run \`bash tools/install-chromium.sh\` to install it ` +
            '(or set BFE_SKIP_BROWSER=1 to skip this test).',
        );
      }
      const dir = tmp();
      const { html } = await writeReport(dir, fixture());

      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({
          executablePath: CHROMIUM,
          args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
        });
        const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
        // Offline by construction: any request that is not the file itself is aborted and kept.
        const blocked: string[] = [];
        await context.route('**', (route) => {
          const url = route.request().url();
          if (url.startsWith('file://')) return route.continue();
          blocked.push(url);
          return route.abort();
        });
        await context.setOffline(true);
        const page = await context.newPage();
        const consoleErrors: string[] = [];
        const consoleWarnings: string[] = [];
        const pageErrors: string[] = [];
        const failed: string[] = [];
        page.on('console', (msg) => {
          if (msg.type() === 'error') consoleErrors.push(msg.text());
          if (msg.type() === 'warning') consoleWarnings.push(msg.text());
        });
        page.on('pageerror', (error) => pageErrors.push(error.message));
        page.on('requestfailed', (request) => failed.push(request.url()));

        await page.goto(pathToFileURL(html).href, { waitUntil: 'load' });
        await page.waitForSelector('body[data-charts="done"]', { timeout: 60_000 });

        const charts = await page.$$eval('.chart', (elements) =>
          elements.map((el) => ({
            id: el.id,
            rendered: el.getAttribute('data-rendered'),
            svgs: el.querySelectorAll('svg').length,
            bars: el.querySelectorAll('g.mark-rect.role-mark path').length,
            lines: el.querySelectorAll('g.mark-line.role-mark path').length,
            points: el.querySelectorAll('g.mark-symbol.role-mark path').length,
            rules: el.querySelectorAll('g.mark-rule.role-mark line').length,
          })),
        );
        const screenshot = join(artifactsDir(), 'report.png');
        await page.screenshot({ path: screenshot, fullPage: true });
        copyFileSync(html, join(artifactsDir(), 'report.html'));
        console.log(`report screenshot: ${screenshot}`);

        expect(blocked).toEqual([]);
        expect(failed).toEqual([]);
        expect(pageErrors).toEqual([]);
        expect(consoleErrors).toEqual([]);
        expect(consoleWarnings).toEqual([]);
        expect(charts.map((c) => c.id)).toEqual(CHART_IDS);
        const byId = new Map(charts.map((c) => [c.id, c]));
        for (const chart of charts) {
          expect(chart.rendered, chart.id).toBe('true');
          expect(chart.svgs, chart.id).toBeGreaterThan(0);
          expect(chart.bars + chart.lines + chart.points + chart.rules, chart.id).toBeGreaterThan(
            0,
          );
        }
        // One bar per system and metric; one per non-baseline system and metric with its CI
        // rule; one per system, subtask and metric; a line and 4 points per swept system and
        // metric; a loss line per seed, per step and per epoch.
        expect(byId.get('chart-headline')?.bars).toBe(7 * 2);
        expect(byId.get('chart-delta')?.rules).toBe(6 * 2 + 2);
        expect(byId.get('chart-subtasks')?.bars).toBe(7 * 4 * 2);
        expect(byId.get('chart-k-sweep')?.lines).toBe(3 * 2);
        expect(byId.get('chart-k-sweep')?.points).toBe(3 * 4 * 2);
        expect(byId.get('chart-adapter')?.lines).toBe(3 + 3);

        const text = await page.locator('body').innerText();
        expect(text).toContain('Run report: locomo-minilm-fusion');
        expect(text).not.toContain('DIAGNOSTIC ONLY');
        expect(await page.locator('table').count()).toBeGreaterThanOrEqual(7);
      } finally {
        await browser?.close();
      }
    },
    180_000,
  );
});
