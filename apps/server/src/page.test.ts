/// <reference lib="dom" />
import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import type { Browser } from 'playwright-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { fakeEmbedder } from '@bfe/store/testing';
import { keysPolicy } from './keys.js';
import { harness } from './testing/harness.js';

const CHROMIUM = '/usr/bin/chromium';
const SKIP = process.env.BFE_SKIP_BROWSER === '1';
/** Screenshots: `BFE_TEST_ARTIFACTS/page`, else the repository's `test-results/page/`. */
const ARTIFACTS = process.env.BFE_TEST_ARTIFACTS
  ? join(resolve(process.env.BFE_TEST_ARTIFACTS), 'page')
  : fileURLToPath(new URL('../../../test-results/page/', import.meta.url));

describe('GET / (no browser)', () => {
  it('serves the page and its assets with a same-origin-only CSP, and hides them from OpenAPI', async () => {
    const h = await harness();
    onTestFinished(() => h.close());
    const page = await h.app.inject({ method: 'GET', url: '/' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.body).toContain('<script type="module" src="/ui/page.js">');
    expect(page.body).not.toMatch(/https?:\/\//);
    for (const [url, type] of [
      ['/ui/page.js', 'text/javascript; charset=utf-8'],
      ['/ui/page.css', 'text/css; charset=utf-8'],
    ] as const) {
      const res = await h.app.inject({ method: 'GET', url });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe(type);
      expect(res.body).not.toMatch(/https?:\/\//);
    }
    // The script never writes HTML from data: textContent only.
    const js = (await h.app.inject({ method: 'GET', url: '/ui/page.js' })).body;
    expect(js).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    expect((await h.app.inject({ method: 'GET', url: '/ui/nope.js' })).statusCode).toBe(404);
    const paths = Object.keys(JSON.parse((await h.app.inject('/openapi.json')).body).paths);
    expect(paths).not.toContain('/');
    expect(paths.some((p) => p.startsWith('/ui/'))).toBe(false);
  });
});

describe('GET / with keys', () => {
  it('loads without a key; the API still needs one', async () => {
    const h = await harness({
      access: keysPolicy({ 'alice-key-5b0c8e1f3a9d47e2': { banks: ['alice'], write: true } }),
    });
    try {
      expect((await h.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
      expect((await h.app.inject({ method: 'GET', url: '/ui/page.js' })).statusCode).toBe(200);
      const search = await h.app.inject({
        method: 'POST',
        url: '/v1/banks/alice/search',
        payload: { query: 'cat' },
      });
      expect(search.statusCode).toBe(401);
    } finally {
      await h.close();
    }
  });
});

describe('the page in headless Chromium (network blocked)', () => {
  it.skipIf(SKIP)(
    'adds memories and searches through the UI: ranked list, pooled vs fused, coloured and floored evidence',
    async () => {
      if (!existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} not found: run \`bash tools/install-chromium.sh\` to install it ` +
            '(or set BFE_SKIP_BROWSER=1 to skip this test).',
        );
      }
      mkdirSync(ARTIFACTS, { recursive: true });
      const h = await harness();
      onTestFinished(() => h.close());
      const url = await h.app.listen({ host: '127.0.0.1', port: 0 });
      const origin = new URL(url).origin;

      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
        const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
        const problems: string[] = [];
        const blocked: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`);
        });
        page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        page.on('requestfailed', (r) => {
          if (r.url().startsWith(origin)) problems.push(`failed: ${r.url()}`);
        });
        await page.route('**', (route) => {
          if (route.request().url().startsWith(`${origin}/`)) return route.continue();
          blocked.push(route.request().url());
          return route.abort('blockedbyclient');
        });

        await page.goto(`${origin}/`);
        await page.click('#sample');
        const sample = (await page.inputValue('#memories')).split('\n');
        expect(sample.length).toBeGreaterThanOrEqual(10);
        // A line with markup stays text: it must never become an element.
        await page.fill(
          '#memories',
          [...sample, '<img src=x onerror="window.pwned=1"> the cat <b>bold</b>'].join('\n'),
        );
        await page.click('#add-btn');
        await page.waitForFunction(() =>
          /Added \d+; the bank holds \d+/.test(
            document.getElementById('add-status')!.textContent ?? '',
          ),
        );
        const total = sample.length + 1;
        expect(await page.textContent('#add-status')).toBe(
          `Added ${total}; the bank holds ${total}.`,
        );
        expect(h.store.list('demo', { limit: 1000 }).total).toBe(total);

        await page.fill('#query', 'What is the name of the cat Miso?');
        await page.fill('#k', '5');
        await page.fill('#token-k', '2'); // few proposed tokens per query token: floors occur
        await page.click('#search-btn');
        await page.waitForSelector('#ranking tbody tr');

        // The page shows what the API answers, in order, with the pooled rank beside the fused.
        const fused = (await (
          await h.app.inject({
            method: 'POST',
            url: '/v1/banks/demo/search',
            payload: { query: 'What is the name of the cat Miso?', k: 5, tokenK: 2 },
          })
        ).json()) as { results: { id: string; rank: number; text: string }[] };
        const pooled = (await (
          await h.app.inject({
            method: 'POST',
            url: '/v1/banks/demo/search',
            payload: {
              query: 'What is the name of the cat Miso?',
              k: 1000,
              system: 'pooled',
              explain: false,
            },
          })
        ).json()) as { results: { id: string; rank: number }[] };
        const pooledRank = new Map(pooled.results.map((r) => [r.id, r.rank]));
        const rows = await page.$$eval('#ranking tbody tr', (trs) =>
          trs.map((tr) => ({
            id: (tr as HTMLElement).dataset.id,
            fused: tr.querySelector('.fused-rank')!.textContent,
            pooled: tr.querySelector('.pooled-rank')!.textContent,
            text: tr.querySelector('.mem')!.textContent,
          })),
        );
        expect(rows).toEqual(
          fused.results.map((r) => ({
            id: r.id,
            fused: String(r.rank),
            pooled: String(pooledRank.get(r.id)),
            text: r.text,
          })),
        );
        expect(rows.length).toBe(5);
        expect(rows.some((r) => r.fused !== r.pooled)).toBe(true);

        // Evidence: coloured spans for matched tokens, dashed grey marks for floored ones.
        const chips = await page.$$eval('.result .tokens .tok', (spans) =>
          spans.map((s) => ({
            floored: s.classList.contains('floored'),
            background: getComputedStyle(s).backgroundColor,
            border: getComputedStyle(s).borderStyle,
            text: s.textContent,
          })),
        );
        const matched = chips.filter((c) => !c.floored);
        const floored = chips.filter((c) => c.floored);
        expect(matched.length).toBeGreaterThan(0);
        expect(floored.length).toBeGreaterThan(0);
        for (const c of matched) expect(c.background).toMatch(/^rgb\(/);
        expect(new Set(matched.map((c) => c.background)).size).toBeGreaterThan(1);
        for (const c of floored) expect(c.border).toBe('dashed');
        expect(await page.locator('#legend .tok.floored').count()).toBe(1);
        expect(await page.locator('table.evidence tr.ev').count()).toBeGreaterThan(0);
        await page.screenshot({ path: join(ARTIFACTS, 'search.png'), fullPage: true });
        await page
          .locator('.result')
          .first()
          .screenshot({ path: join(ARTIFACTS, 'evidence.png') });

        // User text was rendered as text.
        expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBe(
          undefined,
        );
        expect(await page.locator('#results img, #results b').count()).toBe(0);

        expect(problems).toEqual([]);
        expect(blocked).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
    120_000,
  );

  it.skipIf(SKIP)(
    'shows the true pooled rank of a result ranked beyond the top 1000 by pooled score',
    async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found (see above)`);
      const embedder = fakeEmbedder();
      // The needle matches the query's one token exactly (top by sparse score) while its pooled
      // vector points away from the query's: the word most opposed to 'zebra' of 2,000, 12 times.
      const cos = async (a: string, b: string): Promise<number> => {
        const e = await embedder.encode([a, b], 'passage');
        let dot = 0;
        for (let i = 0; i < e.dim; i++) dot += e.pooled[i]! * e.pooled[e.dim + i]!;
        return dot;
      };
      let away = 'x0';
      let least = Infinity;
      for (let i = 0; i < 2000; i++) {
        const c = await cos('zebra', `x${i}`);
        if (c < least) [least, away] = [c, `x${i}`];
      }
      const h = await harness({ embedder });
      onTestFinished(() => h.close());
      const others = Array.from({ length: 1100 }, (_, i) => ({
        id: `o${i}`,
        bank: 'deep',
        text: `w${i}`,
      }));
      await h.store.add([
        ...others,
        { id: 'needle', bank: 'deep', text: ['zebra', ...Array(12).fill(away)].join(' ') },
      ]);
      const api = (await (
        await h.app.inject({
          method: 'POST',
          url: '/v1/banks/deep/search',
          payload: { query: 'zebra', k: 3, tokenK: 2 },
        })
      ).json()) as { results: { id: string; rank: number; pooledRank: number }[] };
      const needle = api.results.find((r) => r.id === 'needle');
      expect(needle?.pooledRank).toBeGreaterThan(1000);
      const origin = new URL(await h.app.listen({ host: '127.0.0.1', port: 0 })).origin;
      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('console', (m) => {
          if (m.type() === 'error' || m.type() === 'warning') problems.push(`console: ${m.text()}`);
        });
        page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        await page.route('**', (route) =>
          route.request().url().startsWith(`${origin}/`)
            ? route.continue()
            : route.abort('blockedbyclient'),
        );
        await page.goto(`${origin}/`);
        await page.fill('#bank', 'deep');
        await page.fill('#query', 'zebra');
        await page.fill('#k', '3');
        await page.fill('#token-k', '2');
        await page.click('#search-btn');
        await page.waitForSelector('#ranking tbody tr');
        const rows = await page.$$eval('#ranking tbody tr', (trs) =>
          trs.map((tr) => ({
            id: (tr as HTMLElement).dataset.id,
            pooled: tr.querySelector('.pooled-rank')!.textContent,
          })),
        );
        expect(rows).toEqual(api.results.map((r) => ({ id: r.id, pooled: String(r.pooledRank) })));
        expect(await page.textContent(`.result[data-id="needle"] .ranks`)).toContain(
          `pooled #${needle!.pooledRank}`,
        );
        expect(problems).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
    120_000,
  );

  it.skipIf(SKIP)(
    'with --keys: the page loads without a key, its calls carry the key typed (kept in sessionStorage)',
    async () => {
      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found (see above)`);
      const key = 'alice-key-5b0c8e1f3a9d47e2';
      const h = await harness({ access: keysPolicy({ [key]: { banks: ['alice'], write: true } }) });
      onTestFinished(() => h.close());
      const origin = new URL(await h.app.listen({ host: '127.0.0.1', port: 0 })).origin;
      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('console', (m) => {
          // Chromium logs every 4xx fetch as a console error; the one 401 below is expected.
          const expected = m.text().includes('status of 401');
          if ((m.type() === 'error' || m.type() === 'warning') && !expected)
            problems.push(`console: ${m.text()}`);
        });
        page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
        const authorization: (string | undefined)[] = [];
        await page.route('**', (route) => {
          if (!route.request().url().startsWith(`${origin}/`))
            return route.abort('blockedbyclient');
          if (route.request().url().includes('/v1/'))
            authorization.push(route.request().headers()['authorization']);
          return route.continue();
        });

        await page.goto(`${origin}/`);
        await page.fill('#bank', 'alice');
        await page.fill('#memories', 'Alice adopted a grey cat called Miso in May.');
        await page.click('#add-btn');
        await page.waitForSelector('#add-status.error');
        expect(await page.textContent('#add-status')).toContain('401 UNAUTHORIZED');
        expect(h.store.banks()).toEqual([]);

        await page.fill('#key', key);
        expect(await page.evaluate(() => sessionStorage.getItem('bfe.apiKey'))).toBe(key);
        await page.click('#add-btn');
        await page.waitForFunction(() =>
          document.getElementById('add-status')!.textContent!.startsWith('Added'),
        );
        await page.fill('#query', 'the cat');
        await page.click('#search-btn');
        await page.waitForSelector('#ranking tbody tr');
        expect(await page.locator('#ranking tbody tr').count()).toBe(1);
        expect(authorization[0]).toBeUndefined();
        expect(authorization.slice(1).every((a) => a === `Bearer ${key}`)).toBe(true);
        expect(authorization.length).toBeGreaterThanOrEqual(4);
        // The key survives a reload of the tab.
        await page.reload();
        expect(await page.inputValue('#key')).toBe(key);
        expect(problems).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
    120_000,
  );
});
