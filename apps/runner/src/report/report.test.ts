import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseVega, View } from 'vega';
import { compile } from 'vega-lite';
import type { TopLevelSpec } from 'vega-lite';
import { describe, expect, it } from 'vitest';
import { tmpDir } from '@bfe/core/testing';
import type { Results } from '@bfe/eval';
import {
  adapterChart,
  deltaChart,
  headlineChart,
  inlineScript,
  kSweepChart,
  loadVegaBundles,
  renderReport,
  reportInputSchema,
  scriptJson,
  subtaskChart,
  writeReport,
} from './index.js';
import type { ReportInput } from './index.js';
import { markdownText } from './format.js';
import { seedMeans } from '../score/seed-means.js';

const diff = (meanDiff: number, low: number, high: number, pValue: number) => ({
  meanDiff,
  ci95: [low, high] as [number, number],
  pValue,
});

/** Three systems on two subtasks; every figure has four decimals so it prints as given. */
function results(): Results {
  const sys = (name: string, r: number, n: number, sub: [number, number, number, number]) => ({
    name,
    metrics: { 'recall@10': r, 'ndcg@10': n },
    subtasks: {
      'multi-hop': { metrics: { 'recall@10': sub[0], 'ndcg@10': sub[1] }, nQueries: 282 },
      temporal: { metrics: { 'recall@10': sub[2], 'ndcg@10': sub[3] }, nQueries: 321 },
    },
    nQueries: 603,
    dropped: { noRelevant: 2 },
  });
  return {
    schemaVersion: 1,
    dataset: 'locomo',
    split: 'test',
    ks: [10],
    subtasks: ['multi-hop', 'temporal'],
    significance: {
      resamples: 10000,
      seed: 42,
      ci: 'stratified-paired-bootstrap-percentile',
      pValue: 'stratified-paired-sign-flip',
    },
    systems: [
      sys('pooled', 0.4213, 0.3011, [0.3925, 0.2802, 0.4501, 0.322]),
      {
        ...sys('sparse-fusion', 0.512, 0.3874, [0.4803, 0.3507, 0.5437, 0.4241]),
        comparisons: {
          pooled: {
            'recall@10': diff(0.0907, 0.0702, 0.111, 0.0001),
            'ndcg@10': diff(0.0863, 0.0655, 0.1071, 0.0002),
          },
        },
      },
      {
        ...sys('bm25', 0.3807, 0.2745, [0.3611, 0.2617, 0.4003, 0.2873]),
        comparisons: {
          pooled: {
            'recall@10': diff(-0.0406, -0.0611, -0.0198, 0.0004),
            'ndcg@10': diff(-0.0266, -0.0452, 0.0083, 0.1234),
          },
        },
      },
    ],
  };
}

function strictInput(): ReportInput {
  return reportInputSchema.parse({
    experiment: 'locomo-minilm',
    runId: 'run-3f2a',
    dataset: 'locomo',
    split: {
      name: 'test',
      policy: 'connected-bank',
      diagnosticOnly: false,
      promotionEligible: true,
      marks: [],
    },
    results: results(),
    kSweep: [16, 32, 64, 128].flatMap((k, i) => [
      {
        k,
        system: 'sparse-fusion',
        metrics: { 'recall@10': 0.5011 + i / 100, 'ndcg@10': 0.3702 + i / 100 },
      },
      {
        k,
        system: 'zero-floor',
        metrics: { 'recall@10': 0.4811 + i / 100, 'ndcg@10': 0.3502 + i / 100 },
      },
    ]),
    adapter: {
      seeds: [42, 43].map((seed) => ({
        seed,
        steps: Array.from({ length: 20 }, (_, step) => ({
          step,
          loss: 2.5 - step / 20 - seed / 1e4,
        })),
        epochs: [
          { epoch: 0, loss: 2.5, validationNdcg10: 0.3702 },
          { epoch: 1, loss: 2.1, validationNdcg10: 0.3811 },
          { epoch: 2, loss: 1.9, validationNdcg10: 0.3799 },
        ],
      })),
      selected: { epoch: 1, alpha: 0.5 },
    },
    receipt: {
      model: 'sentence-transformers/all-MiniLM-L6-v2',
      datasetSha256: 'ab'.repeat(32),
      commit: '16bac8d',
      dirty: true,
      stages: [
        { name: 'encode', seconds: 312.4, cached: true },
        { name: 'score', seconds: 41.25, cached: false },
      ],
      peakRssBytes: 2_147_483_648,
    },
  });
}

function diagnosticInput(): ReportInput {
  return reportInputSchema.parse({
    ...strictInput(),
    split: {
      name: 'test',
      policy: 'query-disjoint-shared-bank',
      diagnosticOnly: true,
      promotionEligible: false,
      marks: ['shared-unlabelled-memory'],
    },
  });
}

/** Tiny stand-ins, so most tests do not copy a megabyte of JavaScript around. */
const fakeBundles = {
  vega: 'window.vega = {};',
  vegaLite: 'window.vegaLite = {};',
  vegaEmbed: 'window.vegaEmbed = function () {};',
};

describe('renderReport: terminal', () => {
  it('prints each system with its figures and Δ [95% CI] as given, aligned', () => {
    const { terminal } = renderReport(strictInput(), { bundles: fakeBundles });
    const lines = terminal.split('\n');
    expect(lines[0]).toBe('locomo-minilm · run run-3f2a · locomo/test');
    const head = lines.find((l) => l.startsWith('system')) as string;
    expect(head).toContain('Δ Recall@10 vs pooled [95% CI]');
    const fusion = lines.find((l) => l.startsWith('sparse-fusion')) as string;
    expect(fusion).toContain('0.5120');
    expect(fusion).toContain('+0.0907 [+0.0702, +0.1110]');
    expect(fusion).toContain('+0.0863 [+0.0655, +0.1071]');
    const bm25 = lines.find((l) => l.startsWith('bm25')) as string;
    expect(bm25).toContain('−0.0406 [−0.0611, −0.0198]');
    // Right-aligned numbers: each Recall@10 value ends where its header does.
    const end = head.indexOf('Recall@10') + 'Recall@10'.length;
    for (const [line, value] of [
      [fusion, '0.5120'],
      [bm25, '0.3807'],
    ] as const) {
      expect(line.indexOf(value) + value.length).toBe(end);
    }
    expect(terminal).not.toContain('DIAGNOSTIC');
  });
});

describe('renderReport: markdown', () => {
  const { markdown } = renderReport(strictInput(), { bundles: fakeBundles });

  it('has the headline table with figures, CIs and p-values as given', () => {
    expect(markdown).toContain('# Run report: locomo-minilm');
    expect(markdown).toContain(
      '| sparse-fusion | 603 | 0.5120 | +0.0907 [+0.0702, +0.1110] | <0.001 | 0.3874 | +0.0863 [+0.0655, +0.1071] | <0.001 |',
    );
    expect(markdown).toContain('| pooled | 603 | 0.4213 | — | — | 0.3011 | — | — |');
    expect(markdown).toContain('| 0.2745 | −0.0266 [−0.0452, +0.0083] | 0.123 |');
    expect(markdown).toMatch(/\| :--- \| ---: \| ---: \|/);
    expect(markdown).toContain('resamples, seed 42');
  });

  it('has the per-subtask, k-sweep, adapter and receipt sections', () => {
    expect(markdown).toContain('### Recall@10 per subtask');
    expect(markdown).toContain('| multi-hop | 282 | 0.3925 | 0.4803 | 0.3611 |');
    expect(markdown).toContain('| temporal | 321 | 0.3220 | 0.4241 | 0.2873 |');
    expect(markdown).toContain('### NDCG@10 by scorer k');
    expect(markdown).toContain('| k | sparse-fusion | zero-floor |');
    expect(markdown).toContain('| 64 | 0.5211 | 0.5011 |');
    expect(markdown).toContain('epoch 1, α = 0.5');
    expect(markdown).toContain('epoch 1\\* loss');
    expect(markdown).toContain('| 42 | 20 | 2.4958 |');
    expect(markdown).toContain('16bac8d (dirty: uncommitted changes)');
    const unknown = reportInputSchema.parse({
      ...strictInput(),
      receipt: { ...strictInput().receipt, commit: null, dirty: null },
    });
    expect(renderReport(unknown, { bundles: fakeBundles }).markdown).toContain(
      'commit: unknown (not a git checkout)',
    );
    expect(markdown).toContain('2.00 GiB (2147483648 bytes)');
    expect(markdown).toContain('| encode | 5 min 12 s | yes |');
    expect(markdown).not.toContain('identical losses');
    expect(markdown).not.toContain('[!WARNING]');
  });

  it('omits the optional sections when their data is absent', () => {
    const bare = reportInputSchema.parse({
      ...strictInput(),
      kSweep: undefined,
      adapter: undefined,
      receipt: undefined,
    });
    const out = renderReport(bare, { bundles: fakeBundles });
    expect(out.markdown).not.toContain('## Sensitivity to k');
    expect(out.markdown).not.toContain('## Query adapter');
    expect(out.markdown).not.toContain('## Receipt');
    expect(out.html).not.toContain('id="chart-k-sweep"');
    expect(out.html).not.toContain('id="chart-adapter"');
  });

  it('says so when every seed recorded the same losses', () => {
    const input = strictInput();
    const seed = input.adapter?.seeds[0];
    const same = reportInputSchema.parse({
      ...input,
      adapter: { ...input.adapter, seeds: [42, 43, 44].map((s) => ({ ...seed, seed: s })) },
    });
    expect(renderReport(same, { bundles: fakeBundles }).markdown).toContain(
      'Seeds 42, 43, 44 recorded identical losses',
    );
  });

  it('lists each seed’s own selection when seeds carry one', () => {
    const input = strictInput();
    const seed = input.adapter!.seeds[0]!;
    const perSeed = reportInputSchema.parse({
      ...input,
      adapter: {
        ...input.adapter,
        seeds: [
          {
            ...seed,
            seed: 42,
            selected: { epoch: 2, alpha: 0.25, zeroFloor: { epoch: 1, alpha: 0.75 } },
          },
          { ...seed, seed: 43, selected: { epoch: 0, alpha: 0.5 } },
        ],
      },
    });
    expect(renderReport(perSeed, { bundles: fakeBundles }).markdown).toContain(
      'per seed: seed 42 adapted epoch 2, α = 0.25; adapted-zero-floor epoch 1, α = 0.75; ' +
        'seed 43 adapted epoch 0, α = 0.5 (',
    );
  });

  it('shows adapted-zero-floor’s own selection beside adapted’s', () => {
    const input = strictInput();
    const own = reportInputSchema.parse({
      ...input,
      adapter: {
        ...input.adapter,
        selected: { epoch: 1, alpha: 0.5, zeroFloor: { epoch: 2, alpha: 0.25 } },
      },
    });
    expect(renderReport(own, { bundles: fakeBundles }).markdown).toContain(
      'Selected on validation NDCG@10: adapted epoch 1, α = 0.5; ' +
        "adapted-zero-floor epoch 2, α = 0.25 (adapted's \\* in the table).",
    );
  });
});

describe('renderReport: diagnostic banner', () => {
  it('is on every rendering of a diagnostic-only run', () => {
    const { markdown, terminal, html } = renderReport(diagnosticInput(), { bundles: fakeBundles });
    expect(markdown).toMatch(
      /^# Run report: locomo-minilm\n\n> \[!WARNING\]\n> \*\*DIAGNOSTIC ONLY/,
    );
    expect(markdown).toContain('shared-unlabelled-memory');
    expect(terminal.split('\n')[1]).toMatch(/^!! DIAGNOSTIC ONLY: .*shared-unlabelled-memory/);
    expect(html).toMatch(/<div class="banner" role="alert">DIAGNOSTIC ONLY/);
  });

  it('is absent from a strict run', () => {
    const { markdown, terminal, html } = renderReport(strictInput(), { bundles: fakeBundles });
    for (const text of [markdown, terminal, html]) expect(text).not.toContain('DIAGNOSTIC ONLY');
    expect(html).not.toContain('class="banner"');
  });
});

describe('renderReport: html', () => {
  it('references nothing over the network and inlines the three bundles', () => {
    const bundles = loadVegaBundles();
    const { html } = renderReport(strictInput());
    // The markup outside the inline scripts (whose code holds templates such as vega-tooltip's
    // `<img src=…>`) loads nothing: no src/href anywhere, no stylesheet link, no CSS import.
    const markup = html.replace(/(<script\b[^>]*>)[\s\S]*?(<\/script>)/gi, '$1$2');
    expect(markup.length).toBeLessThan(60_000);
    expect(markup.match(/\b(src|href|srcset|data)\s*=/gi) ?? []).toEqual([]);
    expect(markup.match(/<link\b|@import|url\(/gi) ?? []).toEqual([]);
    expect(markup.match(/<script\b[^>]*>/gi)).toEqual([
      '<script>',
      '<script>',
      '<script>',
      '<script type="application/json" id="bfe-specs">',
      '<script>',
    ]);
    expect(markup).toContain("connect-src 'none'");
    expect(html.includes(inlineScript(bundles.vega))).toBe(true);
    expect(html.includes(inlineScript(bundles.vegaLite))).toBe(true);
    expect(html.includes(inlineScript(bundles.vegaEmbed))).toBe(true);
    for (const id of [
      'chart-headline',
      'chart-delta',
      'chart-subtasks',
      'chart-k-sweep',
      'chart-adapter',
    ]) {
      expect(markup).toContain(`<div class="chart" id="${id}"></div>`);
    }
    expect(markup).toContain('<td class="num">0.5120</td>');
  });

  it('escapes </script> in names and bundles, and the specs read back unchanged', () => {
    const evil = '</script><script>alert(1)</script><!--';
    const input = strictInput();
    const base = input.results;
    const hostile = reportInputSchema.parse({
      ...input,
      experiment: evil,
      results: {
        ...base,
        systems: [...base.systems, { ...base.systems[0], name: evil, comparisons: undefined }],
      },
    });
    const { html, markdown } = renderReport(hostile, {
      bundles: { ...fakeBundles, vegaEmbed: 'var s = "</script>"; var t = "</SCRIPT >";' },
    });
    // Five script elements: three bundles, the specs, the embedding code.
    expect(html.match(/<script\b/gi)).toHaveLength(5);
    expect(html.match(/<\/script/gi)).toHaveLength(5);
    expect(html).toContain('var s = "<\\/script>"; var t = "<\\/SCRIPT >";');
    expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(1)');
    const json = /<script type="application\/json" id="bfe-specs">(.*?)<\/script>/s.exec(html)?.[1];
    const specs = JSON.parse(json as string) as Record<
      string,
      { data: { values: { system: string }[] } }
    >;
    expect(specs['chart-headline']?.data.values.map((v) => v.system)).toContain(evil);
    expect(markdown).toContain('\\</script>\\<script>alert(1)');
  });

  it('markdownText defuses links, tags and table pipes but keeps CI brackets and <0.001', () => {
    expect(markdownText('[x](javascript:alert(1)) <img src=x> a|b *c* _d_')).toBe(
      '[x\\](javascript:alert(1)) \\<img src=x> a\\|b \\*c\\* \\_d\\_',
    );
    expect(markdownText('+0.0907 [+0.0702, +0.1110] <0.001')).toBe(
      '+0.0907 [+0.0702, +0.1110] <0.001',
    );
  });

  it('scriptJson leaves no markup characters and parses back to the value', () => {
    const value = { a: '</script>', b: '<!-- & -->', c: 'line\u2028sep' };
    const text = scriptJson(value);
    expect(text).not.toMatch(/[<>&\u2028]/);
    expect(JSON.parse(text)).toEqual(value);
  });
});

describe('charts', () => {
  const input = strictInput();
  const order = input.results.systems.map((s) => s.name);
  const specs: [string, TopLevelSpec | undefined][] = [
    ['headline', headlineChart(input.results)],
    ['delta', deltaChart(input.results, 'pooled')],
    ['subtasks', subtaskChart(input.results)],
    ['k sweep', kSweepChart(input.kSweep ?? [], order)],
    ['adapter', adapterChart(input.adapter as NonNullable<ReportInput['adapter']>)],
  ];

  it.each(specs)('%s compiles without warnings and renders SVG marks', async (_, spec) => {
    expect(spec).toBeDefined();
    const warnings: unknown[] = [];
    const collect = (...args: readonly unknown[]) => {
      warnings.push(args);
      return logger;
    };
    const logger = {
      level: () => 0,
      error: collect,
      warn: collect,
      info: () => logger,
      debug: () => logger,
    };
    const { spec: vegaSpec } = compile(spec as TopLevelSpec, { logger: logger as never });
    expect(warnings).toEqual([]);
    const view = new View(parseVega(vegaSpec), { renderer: 'none' });
    const svg = await view.toSVG();
    view.finalize();
    expect(svg).toMatch(/^<svg/);
    expect(svg).toMatch(/<path|<rect|<line/);
  });

  it('has no delta chart when nothing was compared with the baseline', () => {
    expect(deltaChart(input.results, 'bm25')).toBeUndefined();
  });
});

describe('reportInputSchema', () => {
  const valid = () => JSON.parse(JSON.stringify(strictInput())) as Record<string, unknown>;

  it('accepts the fixtures', () => {
    expect(reportInputSchema.safeParse(valid()).success).toBe(true);
  });

  it.each([
    ['a missing results object', (v: Record<string, unknown>) => delete v.results, ['results']],
    ['results of another dataset', (v) => (v.dataset = 'longmemeval'), ['results', 'dataset']],
    [
      'a strict split flagged diagnostic',
      (v) => ((v.split as Record<string, unknown>).diagnosticOnly = true),
      ['split'],
    ],
    [
      'a shared-bank split without its mark',
      (v) =>
        (v.split = {
          name: 'test',
          policy: 'query-disjoint-shared-bank',
          diagnosticOnly: true,
          promotionEligible: false,
          marks: [],
        }),
      ['split'],
    ],
    ['an unknown baseline', (v) => (v.baseline = 'colbert'), ['baseline']],
    [
      'a k-sweep point without ndcg@10',
      (v) => (v.kSweep = [{ k: 64, system: 'sparse-fusion', metrics: { 'recall@10': 0.5 } }]),
      ['kSweep', 0, 'metrics'],
    ],
    [
      'a selected epoch that was not trained',
      (v) => ((v.adapter as { selected: { epoch: number } }).selected.epoch = 3),
      ['adapter', 'seeds', 0, 'epochs'],
    ],
    [
      'a malformed dataset hash',
      (v) => ((v.receipt as Record<string, unknown>).datasetSha256 = 'xyz'),
      ['receipt', 'datasetSha256'],
    ],
    ['an unknown field', (v) => (v.colour = 'red'), []],
  ] as [string, (v: Record<string, unknown>) => unknown, (string | number)[]][])(
    'rejects %s',
    (_, mutate, path) => {
      const v = valid();
      mutate(v);
      const parsed = reportInputSchema.safeParse(v);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.issues.map((i) => i.path)).toContainEqual(path);
    },
  );
});

describe('writeReport', () => {
  it('writes report.md and report.html and leaves no temporary file', async () => {
    const dir = tmpDir('bfe-report-');
    const out = join(dir, 'runs', 'r1');
    const input = strictInput();
    const written = await writeReport(out, input, { bundles: fakeBundles });
    expect(written).toEqual({ markdown: join(out, 'report.md'), html: join(out, 'report.html') });
    expect(readdirSync(out).sort()).toEqual(['report.html', 'report.md']);
    const rendered = renderReport(input, { bundles: fakeBundles });
    expect(readFileSync(written.markdown, 'utf8')).toBe(rendered.markdown);
    expect(readFileSync(written.html, 'utf8')).toBe(rendered.html);
    // A second write replaces both files in place.
    await writeReport(out, diagnosticInput(), { bundles: fakeBundles });
    expect(readdirSync(out).sort()).toEqual(['report.html', 'report.md']);
    expect(readFileSync(written.markdown, 'utf8')).toContain('DIAGNOSTIC ONLY');
  });
});

describe('seeds, epoch 0 and selection data in the report', () => {
  /** The strict input's results with an `adapted` row (a copy of sparse fusion's figures). */
  function withAdapted(r: Results = results()): Results {
    const fusion = r.systems.find((s) => s.name === 'sparse-fusion')!;
    return { ...r, systems: [...r.systems, { ...fusion, name: 'adapted' }] };
  }
  /** A second seed: every adapted figure 0.01 higher. */
  function secondSeed(r: Results): Results {
    return {
      ...r,
      systems: r.systems.map((s) =>
        s.name !== 'adapted'
          ? s
          : {
              ...s,
              metrics: Object.fromEntries(
                Object.entries(s.metrics).map(([k, v]) => [k, v + 0.01]),
              ) as typeof s.metrics,
            },
      ),
    };
  }
  const selecting = (epochs: [number, number]) => {
    const input = strictInput();
    const seed = input.adapter!.seeds[0]!;
    return {
      seeds: [
        { ...seed, seed: 42, selected: { epoch: epochs[0], alpha: 0.5 } },
        { ...seed, seed: 43, selected: { epoch: epochs[1], alpha: 0.25 } },
      ],
      selected: { epoch: epochs[0], alpha: 0.5 },
    };
  };

  it('labels the adapted row the identity adapter with a re-selected α when epoch 0 was selected', () => {
    const input = strictInput();
    const one = (epoch: number) =>
      renderReport(
        reportInputSchema.parse({
          ...input,
          results: withAdapted(),
          adapter: { ...input.adapter, selected: { epoch, alpha: 0.25 } },
        }),
        { bundles: fakeBundles },
      );
    const identity = one(0);
    for (const text of [identity.markdown, identity.terminal, identity.html]) {
      expect(text).toContain('adapted (epoch 0 = identity, α re-selected)');
    }
    const trained = one(1);
    for (const text of [trained.markdown, trained.terminal]) {
      expect(text).not.toContain('epoch 0 = identity');
      expect(text).toMatch(/adapted\b/);
    }
  });

  it('headlines the mean ± std over seeds with each seed beside it, and names the seeds that selected epoch 0', () => {
    const input = strictInput();
    const r42 = withAdapted();
    const r43 = secondSeed(r42);
    const means = seedMeans([
      { seed: 42, results: r42 },
      { seed: 43, results: r43 },
    ]);
    const out = renderReport(
      reportInputSchema.parse({
        ...input,
        results: r42,
        adapter: selecting([2, 0]),
        seeds: { splitSeed: 42, means },
      }),
      { bundles: fakeBundles },
    );
    const label = 'adapted (epoch 0 = identity, α re-selected in seed 43)';
    expect(out.terminal).toContain('Mean over 2 training seeds');
    expect(out.terminal).toContain(label);
    // sparse fusion's NDCG@10 is 0.3874 in both seeds; the adapted row 0.3874 and 0.3974.
    expect(out.terminal).toContain('0.3874 (every seed)');
    expect(out.terminal).toContain('0.3924 ± 0.0071');
    expect(out.terminal).toContain('0.3874 / 0.3974');
    expect(out.terminal).toContain(
      'Identical test metrics in seeds 42, 43, so not independent replicates: pooled, sparse-fusion, bm25',
    );
    expect(out.markdown).toContain(
      'training seeds 42, 43; one split (split seed 42) shared by all',
    );
    expect(out.markdown).toContain(`| ${label} | 603 / 603 |`);
    // The paired table is the first seed's, which selected epoch 2: a trained adapter.
    expect(out.markdown).toContain('### Seed 42: paired differences');
    expect(out.markdown).toMatch(/\n\| adapted \| 603 \|/);
  });

  it('shows plain figures for a single seed', () => {
    const r = withAdapted();
    const out = renderReport(
      reportInputSchema.parse({
        ...strictInput(),
        results: r,
        seeds: { splitSeed: 42, means: seedMeans([{ seed: 42, results: r }]) },
      }),
      { bundles: fakeBundles },
    );
    expect(out.terminal).not.toContain('mean ± std');
    expect(out.markdown).not.toContain('Mean over');
    expect(out.markdown).toContain('### Headline (subtasks averaged equally)');
    expect(out.markdown).toContain('training seed 42; one split (split seed 42)');
  });

  it('says in the headline of every rendering that validation numbers are on selection data', () => {
    const input = strictInput();
    const validation = reportInputSchema.parse({
      ...input,
      split: { ...input.split, name: 'validation', selectionData: true },
      results: { ...results(), split: 'validation' },
    });
    const out = renderReport(validation, { bundles: fakeBundles });
    const banner =
      'SELECTION DATA: these numbers are on the validation part, the data the query adapter is selected on';
    expect(out.markdown).toContain(`> [!WARNING]\n> **${banner}`);
    expect(out.terminal).toContain(`!! ${banner}`);
    expect(out.html).toContain(`<div class="banner" role="alert">${banner}`);
    expect(renderReport(strictInput(), { bundles: fakeBundles }).terminal).not.toContain(
      'SELECTION DATA',
    );
    // Only a train or validation part can be selection data.
    expect(() =>
      reportInputSchema.parse({ ...input, split: { ...input.split, selectionData: true } }),
    ).toThrow(/selection data is the train or validation part/);
  });

  it('refuses seed means that list other systems than the results', () => {
    const r = withAdapted();
    expect(() =>
      reportInputSchema.parse({
        ...strictInput(),
        results: r,
        seeds: { splitSeed: 42, means: seedMeans([{ seed: 42, results: results() }]) },
      }),
    ).toThrow(/seed means must list the systems of the results/);
  });
});

describe('renderReport: memory budgets', () => {
  /** The fixture's results with every metric at K = 4, 8, 10, 16 (value = base + K / 1000). */
  function withBudgets(gains?: 'binary' | 'graded'): ReportInput {
    const input = strictInput();
    const ks = [4, 8, 10, 16];
    const at = (m: Record<string, number>): Record<string, number> =>
      Object.fromEntries(
        ['recall', 'ndcg'].flatMap((kind) =>
          ks.map((k) => [`${kind}@${k}`, (m[`${kind}@10`] as number) + (k - 10) / 1000]),
        ),
      );
    const r = input.results;
    return reportInputSchema.parse({
      ...input,
      results: {
        ...r,
        ks,
        systems: r.systems.map((s) => ({
          ...s,
          metrics: at(s.metrics),
          subtasks: Object.fromEntries(
            Object.entries(s.subtasks).map(([k, v]) => [k, { ...v, metrics: at(v.metrics) }]),
          ),
        })),
        ...(gains === undefined ? {} : { meta: { gains } }),
      },
    });
  }

  it('tables Recall@K and NDCG@K for K = 4, 8, 10, 16, per system, in markdown and html', () => {
    const out = renderReport(withBudgets('binary'), { bundles: fakeBundles });
    expect(out.markdown).toContain('## Memory budgets');
    expect(out.markdown).toContain(
      '| system | Recall@4 | Recall@8 | Recall@10 | Recall@16 | NDCG@4 | NDCG@8 | NDCG@10 | NDCG@16 |',
    );
    expect(out.markdown).toContain(
      '| sparse-fusion | 0.5060 | 0.5100 | 0.5120 | 0.5180 | 0.3814 | 0.3854 | 0.3874 | 0.3934 |',
    );
    expect(out.markdown).toContain('| pooled | 0.4153 | 0.4193 | 0.4213 | 0.4273 |');
    expect(out.markdown).not.toContain('graded gains');
    expect(out.html).toContain('<h2>Memory budgets</h2>');
    expect(out.html).toContain('Recall@16');
    // The section comes right after the headline.
    expect(out.markdown.indexOf('## Memory budgets')).toBeGreaterThan(
      out.markdown.indexOf('## Results'),
    );
    expect(out.markdown.indexOf('## Memory budgets')).toBeLessThan(
      out.markdown.indexOf('## Per subtask'),
    );
  });

  it('says when NDCG used graded gains', () => {
    const out = renderReport(withBudgets('graded'), { bundles: fakeBundles });
    expect(out.markdown).toContain('NDCG with graded gains (gain = grade)');
  });

  it('is absent when the results hold no budget but k = 10', () => {
    const out = renderReport(strictInput(), { bundles: fakeBundles });
    expect(out.markdown).not.toContain('## Memory budgets');
    expect(out.html).not.toContain('Memory budgets');
  });
});
