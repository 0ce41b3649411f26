import { formatLoadSummary, terminalTable } from '@bfe/core';
import type { TopLevelSpec } from 'vega-lite';
import { loadVegaBundles } from './bundles.js';
import type { VegaBundles } from './bundles.js';
import { adapterChart, deltaChart, headlineChart, kSweepChart, subtaskChart } from './charts.js';
import { crossFitFact, crossFitTable } from './crossfit.js';
import { htmlTable, htmlText, intervalChoice, markdownTable, markdownText } from './format.js';
import type { Table } from './format.js';
import { DEFAULT_BASELINE } from './schema.js';
import type { ReportInput } from './schema.js';
import {
  adaptedLabel,
  adapterSelectionText,
  adapterTable,
  budgetTable,
  headlineTable,
  kSweepTables,
  receiptFacts,
  seedMeansTable,
  seedNotes,
  seedsIdentical,
  sparseFusionHeadline,
  stageTable,
  subtaskTables,
} from './tables.js';
import { transitionsSection } from './transitions.js';

/** The three renderings of one run report. */
export interface RenderedReport {
  /** GitHub-flavoured markdown: every table, the banner as a `[!WARNING]` alert. */
  readonly markdown: string;
  /** One self-contained HTML page: tables and Vega-Lite charts, no network access. */
  readonly html: string;
  /** The compact headline table for a terminal. */
  readonly terminal: string;
}

/** Options of {@link renderReport}; tests pass small stand-in bundles. */
export interface RenderOptions {
  /** The browser bundles to inline; default {@link loadVegaBundles} (read once per process). */
  readonly bundles?: VegaBundles;
}

/** A page section: a heading, prose lines, tables, and the charts drawn after the tables. */
interface Section {
  readonly title: string;
  readonly lines: readonly string[];
  readonly tables: readonly Table[];
  readonly charts: readonly { readonly id: string; readonly spec: TopLevelSpec }[];
}

/**
 * The warning at the top of every rendering of a run evaluated on selection data (the train or
 * validation part) or not promotion-eligible; undefined for a strict run on its test part.
 */
export function diagnosticBanner(input: ReportInput): string | undefined {
  const { diagnosticOnly, promotionEligible, marks, policy, selectionData, name } = input.split;
  const parts: string[] = [];
  if (selectionData === true) {
    parts.push(
      `SELECTION DATA: these numbers are on the ${name} part, the data the query adapter is ` +
        `${name === 'train' ? 'trained' : 'selected'} on; they are not held-out test results.`,
    );
  }
  if (!diagnosticOnly && promotionEligible) return parts.length === 0 ? undefined : parts[0];
  parts.push(
    `${diagnosticOnly ? 'DIAGNOSTIC ONLY' : 'NOT PROMOTION-ELIGIBLE'}: these results must not be ` +
      'promoted or mixed with strict (connected-bank) results.',
  );
  if (policy !== undefined) parts.push(`Split policy: ${policy}.`);
  if (marks.length > 0) parts.push(`Marks: ${marks.join(', ')}.`);
  if (marks.includes('shared-unlabelled-memory')) {
    parts.push('Train, validation and test queries share one unlabelled memory bank.');
  }
  return parts.join(' ');
}

function header(input: ReportInput): [string, string][] {
  const { results, split } = input;
  const first = results.systems[0];
  const splitParts = [split.name];
  if (split.policy !== undefined) splitParts.push(`policy ${split.policy}`);
  if (split.hash !== undefined) splitParts.push(`split hash ${split.hash.slice(0, 12)}`);
  splitParts.push(split.promotionEligible ? 'promotion-eligible' : 'not promotion-eligible');
  const facts: [string, string][] = [
    ['run', input.runId],
    ['dataset', input.dataset],
    ['split', splitParts.join(', ')],
  ];
  const seeds = input.seeds;
  const trained = seeds?.means.seeds.filter((x): x is number => x !== null) ?? [];
  if (seeds !== undefined && trained.length > 0) {
    facts.push([
      'seeds',
      `training seed${trained.length > 1 ? 's' : ''} ${trained.join(', ')}; ` +
        (seeds.splitSeed === 'per-seed'
          ? 'each on its own split (split.seed: per-seed)'
          : `one split (split seed ${seeds.splitSeed})${trained.length > 1 ? ' shared by all' : ''}`),
    ]);
  }
  if (input.load !== undefined) facts.push(['loading', formatLoadSummary(input.load)]);
  const crossFit = crossFitFact(results);
  if (crossFit !== undefined) facts.push(['cross-fitting', crossFit]);
  if (first !== undefined) {
    facts.push([
      'queries',
      `${first.nQueries} evaluated, ${first.dropped.noRelevant} dropped (no relevant memory)`,
    ]);
  }
  const sig = results.significance;
  facts.push([
    'significance',
    sig === undefined
      ? 'no paired comparisons in the results'
      : `Δ = system − ${baseline(input)} on the same queries; 95% CI: stratified paired ` +
        `bootstrap percentile (${sig.resamples} resamples, seed ${sig.seed}); p: stratified ` +
        'paired sign-flip test' +
        (sig.clusters === undefined
          ? ''
          : `; beside them the same over ${sig.clusters.unit}s (paired cluster bootstrap, ` +
            `cluster sign-flip); headline: ${intervalChoice(results).note}`),
  ]);
  return facts;
}

const baseline = (input: ReportInput): string => input.baseline ?? DEFAULT_BASELINE;

/** The seed means when there is more than one training seed (then they are the headline). */
const severalSeeds = (input: ReportInput) =>
  input.seeds !== undefined && input.seeds.means.seeds.length > 1 ? input.seeds.means : undefined;

function sections(input: ReportInput): Section[] {
  const { results } = input;
  const base = baseline(input);
  const order = results.systems.map((s) => s.name);
  const out: Section[] = [];
  const delta = deltaChart(results, base);
  const means = severalSeeds(input);
  const firstLabel = adaptedLabel(input.adapter, 'first');
  out.push({
    title: 'Results',
    lines: means === undefined ? [] : seedNotes(means, input.split.name),
    tables: [
      ...(means === undefined
        ? []
        : [seedMeansTable(means, adaptedLabel(input.adapter, 'all'), false)]),
      headlineTable(
        results,
        base,
        false,
        firstLabel,
        means === undefined
          ? undefined
          : `Seed ${means.seeds[0]}: paired differences (subtasks averaged equally)`,
      ),
      ...(base === 'pooled' ? sparseFusionHeadline(results, firstLabel) : []),
    ],
    charts: [
      { id: 'chart-headline', spec: headlineChart(results) },
      ...(delta === undefined ? [] : [{ id: 'chart-delta', spec: delta }]),
    ],
  });
  const folds = crossFitTable(results, ['pooled', 'sparse-fusion', 'adapted', 'hybrid-selected']);
  if (folds !== undefined) out.push({ title: 'Folds', lines: [], tables: [folds], charts: [] });
  const budgets = budgetTable(results);
  if (budgets !== undefined) {
    out.push({ title: 'Memory budgets', lines: [], tables: [budgets], charts: [] });
  }
  const subtasks = subtaskChart(results);
  if (results.subtasks.length > 0) {
    out.push({
      title: 'Per subtask',
      lines: [],
      tables: subtaskTables(results),
      charts: subtasks === undefined ? [] : [{ id: 'chart-subtasks', spec: subtasks }],
    });
  }
  const transitions = transitionsSection(results);
  if (transitions !== undefined) out.push(transitions);
  if (input.kSweep !== undefined) {
    out.push({
      title: 'Sensitivity to k',
      lines: [],
      tables: kSweepTables(input.kSweep, order),
      charts: [{ id: 'chart-k-sweep', spec: kSweepChart(input.kSweep, order) }],
    });
  }
  if (input.adapter !== undefined) {
    const { adapter } = input;
    const perSeed = adapter.seeds.filter((s) => s.selected !== undefined);
    const lines = [
      perSeed.length > 1
        ? `Selected on validation NDCG@10, per seed: ${perSeed.map((s) => `seed ${s.seed} ${adapterSelectionText(s.selected!)}`).join('; ')} (the first seed's adapted one is starred in the table).`
        : `Selected on validation NDCG@10: ${adapterSelectionText(adapter.selected)} (adapted's * in the table).`,
    ];
    if (seedsIdentical(adapter)) {
      lines.push(
        `Seeds ${adapter.seeds.map((s) => s.seed).join(', ')} recorded identical losses: ` +
          'not independent replicates.',
      );
    }
    out.push({
      title: 'Query adapter',
      lines,
      tables: [adapterTable(adapter)],
      charts: [{ id: 'chart-adapter', spec: adapterChart(adapter) }],
    });
  }
  if (input.receipt !== undefined) {
    out.push({
      title: 'Receipt',
      lines: receiptFacts(input.receipt).map(([k, v]) => `${k}: ${v}`),
      tables: [stageTable(input.receipt)],
      charts: [],
    });
  }
  return out;
}

function renderMarkdown(input: ReportInput): string {
  const parts = [`# Run report: ${markdownText(input.experiment)}`];
  const banner = diagnosticBanner(input);
  if (banner !== undefined) parts.push(`> [!WARNING]\n> **${markdownText(banner)}**`);
  parts.push(
    header(input)
      .map(([k, v]) => `- **${k}:** ${markdownText(v)}`)
      .join('\n'),
  );
  for (const section of sections(input)) {
    parts.push(`## ${section.title}`);
    if (section.lines.length > 0) {
      parts.push(section.lines.map((l) => `- ${markdownText(l)}`).join('\n'));
    }
    for (const table of section.tables) parts.push(markdownTable(table));
  }
  return `${parts.join('\n\n')}\n`;
}

function renderTerminal(input: ReportInput): string {
  const lines = [`${input.experiment} · run ${input.runId} · ${input.dataset}/${input.split.name}`];
  const banner = diagnosticBanner(input);
  if (banner !== undefined) lines.push(`!! ${banner}`);
  if (input.load !== undefined) lines.push(`loading: ${formatLoadSummary(input.load)}`);
  const crossFit = crossFitFact(input.results);
  if (crossFit !== undefined) lines.push(crossFit);
  const means = severalSeeds(input);
  if (means === undefined) {
    lines.push(
      terminalTable(
        headlineTable(input.results, baseline(input), true, adaptedLabel(input.adapter, 'first')),
      ),
    );
    const { note } = intervalChoice(input.results);
    if (note !== '') lines.push(`intervals: ${note}`);
  } else {
    const table = seedMeansTable(means, adaptedLabel(input.adapter, 'all'), true);
    lines.push(table.title, terminalTable(table));
    for (const note of seedNotes(means, input.split.name)) lines.push(`note: ${note}`);
  }
  const budgets = budgetTable(input.results);
  if (budgets !== undefined) {
    const seedNote = means === undefined ? '' : ` (seed ${input.seeds?.means.seeds[0] ?? ''})`;
    lines.push('', `${budgets.title}${seedNote}`, terminalTable(budgets));
  }
  return lines.join('\n');
}

/**
 * JSON for an inline `<script>`: `<`, `>` and `&` become `\u003c`/`\u003e`/`\u0026`, so no
 * value (a system named `</script>`) can close the element or open a comment; JSON.parse
 * reads the escapes back unchanged.
 */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** A bundle's JavaScript as inline script text: `</script` cannot end the element early. */
export function inlineScript(code: string): string {
  return code.replace(/<\/(script)/gi, '<\\/$1');
}

const STYLE = `
:root { color-scheme: light; --fg: #1b1f24; --muted: #57606a; --rule: #d0d7de; }
body { font: 14px/1.45 system-ui, -apple-system, 'Segoe UI', sans-serif; color: var(--fg);
  margin: 2rem auto; max-width: 1100px; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin-bottom: .5rem; }
h2 { border-bottom: 1px solid var(--rule); padding-bottom: .25rem; margin-top: 2rem; }
h3 { font-size: 1rem; margin: 1.2rem 0 .4rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.banner { border: 2px solid #bf8700; background: #fff8c5; padding: .75rem 1rem;
  border-radius: 6px; font-weight: 600; margin: 1rem 0; }
table { border-collapse: collapse; margin: .25rem 0 1rem; font-size: 13px; }
th, td { border: 1px solid var(--rule); padding: .2rem .5rem; text-align: left; }
th { background: #f6f8fa; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart-frame { margin: 1rem 0 1.5rem; overflow-x: auto; max-width: 100%; }
ul.notes { color: var(--muted); }
`;

// Renders every spec, marks each container when done (or failed), then the body when all
// settled: the headless test waits on `data-charts`. Failures are console errors on purpose.
const EMBED = `
(function () {
  var specs = JSON.parse(document.getElementById('bfe-specs').textContent);
  var pending = Object.keys(specs).map(function (id) {
    var el = document.getElementById(id);
    return vegaEmbed(el, specs[id], { mode: 'vega-lite', renderer: 'svg', actions: false })
      .then(function () { el.setAttribute('data-rendered', 'true'); })
      .catch(function (error) {
        el.setAttribute('data-rendered', 'error');
        el.textContent = 'This chart failed to render: ' + error;
        console.error(error);
      });
  });
  Promise.all(pending).then(function () { document.body.setAttribute('data-charts', 'done'); });
})();
`;

// No network at all: nothing may be fetched, connected to or framed; vega compiles its
// expressions with Function, hence 'unsafe-eval'.
const CSP =
  "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; " +
  "img-src data: blob:; connect-src 'none'; font-src 'none'; frame-src 'none'; base-uri 'none'; " +
  "form-action 'none'";

function renderHtml(input: ReportInput, bundles: VegaBundles): string {
  const banner = diagnosticBanner(input);
  const body: string[] = [`<h1>Run report: ${htmlText(input.experiment)}</h1>`];
  if (banner !== undefined) body.push(`<div class="banner" role="alert">${htmlText(banner)}</div>`);
  body.push(
    `<dl class="facts">\n${header(input)
      .map(([k, v]) => `<dt>${htmlText(k)}</dt><dd>${htmlText(v)}</dd>`)
      .join('\n')}\n</dl>`,
  );
  const specs: Record<string, TopLevelSpec> = {};
  for (const section of sections(input)) {
    body.push(`<section>\n<h2>${htmlText(section.title)}</h2>`);
    if (section.lines.length > 0) {
      body.push(
        `<ul class="notes">${section.lines.map((l) => `<li>${htmlText(l)}</li>`).join('')}</ul>`,
      );
    }
    for (const table of section.tables) body.push(htmlTable(table));
    for (const chart of section.charts) {
      specs[chart.id] = chart.spec;
      // vega-embed makes the container inline-block; the frame scrolls a chart wider than the page.
      body.push(`<div class="chart-frame"><div class="chart" id="${chart.id}"></div></div>`);
    }
    body.push('</section>');
  }
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${CSP}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${htmlText(`${input.experiment} · ${input.runId}`)}</title>`,
    `<style>${STYLE}</style>`,
    '</head>',
    '<body>',
    ...body,
    `<script>${inlineScript(bundles.vega)}</script>`,
    `<script>${inlineScript(bundles.vegaLite)}</script>`,
    `<script>${inlineScript(bundles.vegaEmbed)}</script>`,
    `<script type="application/json" id="bfe-specs">${scriptJson(specs)}</script>`,
    `<script>${EMBED}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

/**
 * Renders a run report three ways from one validated input (parse it with
 * `reportInputSchema` at the boundary). Deterministic: the same input gives the same strings.
 * Reads the Vega browser bundles once per process unless `options.bundles` is given.
 *
 * @example
 * const { terminal, markdown, html } = renderReport(reportInputSchema.parse(raw));
 * // terminal:
 * // locomo-minilm · run 3f2a · locomo/test
 * // system         Recall@10  Δ Recall@10 vs pooled [95% CI]  NDCG@10  …
 * // pooled            0.4213                               —   0.3011  …
 * // sparse-fusion     0.5120  +0.0907 [+0.0702, +0.1110]      0.3874  …
 */
export function renderReport(input: ReportInput, options: RenderOptions = {}): RenderedReport {
  return {
    markdown: renderMarkdown(input),
    html: renderHtml(input, options.bundles ?? loadVegaBundles()),
    terminal: renderTerminal(input),
  };
}
