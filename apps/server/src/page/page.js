// The bfe web page: add memories to a bank, search it, and show why each memory was retrieved.
// Vanilla JS, no build step, no network beyond this origin. Memory text is user data: it only
// ever reaches the DOM through textContent, never as an HTML string.
/* global document, fetch, sessionStorage -- a browser script */

const SAMPLE = [
  'Alice adopted a grey cat called Miso in May.',
  'Alice runs a half marathon every autumn.',
  'Bob is allergic to peanuts and carries an epipen.',
  'The team offsite is in Lisbon on the second week of June.',
  'Alice prefers green tea over coffee in the morning.',
  'Bob bought a used red bicycle from his neighbour.',
  'Miso the cat likes to sleep on the warm laptop.',
  'Carol moved to Berlin to work on a robotics startup.',
  'The dentist appointment was moved to Thursday at 3 pm.',
  'Alice is learning Portuguese before the Lisbon trip.',
  'Bob plays bass guitar in a jazz band on Fridays.',
  'Carol recommended the novel Piranesi to Alice.',
];
const KEY_ITEM = 'bfe.apiKey';

const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** An element with classes and text (textContent: safe for user data). */
function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
const fmt = (x) => (x === null || x === undefined ? '—' : Number(x).toFixed(3));
const clamp01 = (x) => Math.min(1, Math.max(0, x));
/** Similarity → background colour: red (0) through yellow to green (1), an hsl scale. */
function colour(similarity) {
  const t = clamp01(similarity);
  return `hsl(${Math.round(120 * t)} 75% ${Math.round(82 - 16 * t)}%)`;
}

function setStatus(node, text, isError = false) {
  node.textContent = text;
  node.classList.toggle('error', isError);
}

/** A JSON request to this server, with the key when one is given; throws the server's message. */
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  const key = $('key').value.trim();
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json().catch(() => null);
  if (!res.ok) {
    const message =
      json && json.error ? `${json.error.code}: ${json.error.message}` : res.statusText;
    throw new Error(`${res.status} ${message}`);
  }
  return json;
}

const bankPath = () => `/v1/banks/${encodeURIComponent($('bank').value.trim())}`;

async function addMemories() {
  const status = $('add-status');
  const lines = $('memories')
    .value.split('\n')
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
  if (lines.length === 0) return setStatus(status, 'Nothing to add: one memory per line.', true);
  const stamp = Date.now().toString(36);
  const memories = lines.map((text, i) => ({ id: `m-${stamp}-${i + 1}`, text }));
  $('add-btn').disabled = true;
  setStatus(status, `Adding ${memories.length}…`);
  try {
    for (let i = 0; i < memories.length; i += 256)
      await api('POST', `${bankPath()}/memories`, { memories: memories.slice(i, i + 256) });
    const list = await api('GET', `${bankPath()}/memories?limit=1`);
    setStatus(status, `Added ${memories.length}; the bank holds ${list.total}.`);
    $('memories').value = '';
  } catch (error) {
    setStatus(status, `Add failed: ${error.message}`, true);
  } finally {
    $('add-btn').disabled = false;
  }
}

/** The query as coloured chips: one per query token, by the similarity of its match. */
function tokenChips(tokens) {
  const row = el('div', 'tokens');
  for (const t of tokens) {
    const chip = el(
      'span',
      t.floored ? 'tok floored' : 'tok',
      t.queryPiece ?? `#${t.queryTokenId}`,
    );
    chip.dataset.queryToken = String(t.queryToken);
    if (t.floored) {
      chip.title = `floored: t_i = ${fmt(t.floor)}, share ${(100 * t.share).toFixed(1)}%`;
    } else {
      chip.style.backgroundColor = colour(t.similarity);
      chip.title = `→ ${t.memoryPiece ?? '?'} (similarity ${fmt(t.similarity)}, share ${(100 * t.share).toFixed(1)}%)`;
    }
    row.append(chip);
  }
  return row;
}

/** Per query token: the memory token it matched (or the floor), similarity, share of the score. */
function evidenceTable(tokens) {
  const table = el('table', 'evidence');
  const head = table.createTHead().insertRow();
  for (const h of ['query token', 'matched memory token', 'similarity', 'share of sparse'])
    head.append(el('th', '', h));
  const maxShare = Math.max(1e-9, ...tokens.map((t) => Math.abs(t.share)));
  const bodyRows = table.createTBody();
  for (const t of tokens) {
    const tr = bodyRows.insertRow();
    tr.className = t.floored ? 'ev floored-row' : 'ev';
    const q = el('span', t.floored ? 'tok floored' : 'tok', t.queryPiece ?? `#${t.queryTokenId}`);
    const m = el(
      'span',
      t.floored ? 'tok floored' : 'tok match',
      t.floored ? `floor t_i = ${fmt(t.floor)}` : (t.memoryPiece ?? `#${t.memoryTokenId}`),
    );
    if (!t.floored) {
      q.style.backgroundColor = colour(t.similarity);
      m.style.backgroundColor = colour(t.similarity);
    }
    tr.insertCell().append(q);
    tr.insertCell().append(m);
    const sim = tr.insertCell();
    sim.className = 'num';
    sim.textContent = t.floored ? 'floored' : fmt(t.similarity);
    const share = tr.insertCell();
    share.className = 'num';
    const bar = el('span', 'bar');
    bar.style.width = `${Math.round(60 * (Math.abs(t.share) / maxShare))}px`;
    share.append(bar, document.createTextNode(` ${(100 * t.share).toFixed(1)}%`));
  }
  return table;
}

/** The ranking: fused rank beside the pooled rank, then each memory with its evidence. */
function render(fused, pooledRanks, query) {
  const out = $('results');
  out.replaceChildren();
  if (fused.length === 0) {
    out.append(el('p', 'hint', 'No results: the bank is empty or unknown.'));
    return;
  }
  out.append(el('h2', '', `Results for “${query}”`));
  const table = el('table', 'evidence');
  table.id = 'ranking';
  const head = table.createTHead().insertRow();
  for (const h of ['fused rank', 'pooled rank', 'Δ', 'score', 'pooled', 'sparse', 'memory'])
    head.append(el('th', '', h));
  const tbody = table.createTBody();
  const cards = el('div', 'cards');
  for (const r of fused) {
    const pooledRank = pooledRanks.get(r.id);
    const delta = pooledRank === undefined ? null : pooledRank - r.rank;
    const deltaText =
      delta === null ? '—' : delta > 0 ? `▲${delta}` : delta < 0 ? `▼${-delta}` : '=';
    const deltaClass = delta > 0 ? 'num up' : delta < 0 ? 'num down' : 'num';
    const tr = tbody.insertRow();
    tr.dataset.id = r.id;
    const cells = [
      [String(r.rank), 'num fused-rank'],
      [pooledRank === undefined ? '—' : String(pooledRank), 'num pooled-rank'],
      [deltaText, deltaClass],
      [fmt(r.score), 'num'],
      [fmt(r.pooled), 'num'],
      [fmt(r.sparse), 'num'],
      [r.text, 'mem'],
    ];
    for (const [text, cls] of cells) {
      const td = tr.insertCell();
      td.className = cls;
      td.textContent = text;
    }

    const card = el('article', 'result');
    card.dataset.id = r.id;
    const ranks = el('div', 'ranks');
    ranks.append(
      el('span', 'rank', `#${r.rank}`),
      el('span', '', `pooled #${pooledRank ?? '—'}`),
      el('span', deltaClass.replace('num', '').trim(), deltaText),
      el('span', '', `score ${fmt(r.score)}`),
      el('span', '', `pooled ${fmt(r.pooled)} · sparse ${fmt(r.sparse)}`),
    );
    card.append(ranks, el('p', 'text', r.text));
    const ev = r.evidence;
    if (ev) {
      card.append(tokenChips(ev.tokens));
      card.append(
        el(
          'div',
          'hint',
          `score ${fmt(ev.score)} = α·z(pooled) ${fmt(ev.pooledPart)} + (1−α)·z(sparse) ${fmt(ev.sparsePart)}; ` +
            `${ev.tokens.filter((t) => t.floored).length} of ${ev.tokens.length} query tokens floored (k = ${ev.k})`,
        ),
      );
      const details = el('details');
      details.open = r.rank <= 3;
      details.append(el('summary', '', 'evidence, token by token'), evidenceTable(ev.tokens));
      card.append(details);
    }
    cards.append(card);
  }
  out.append(table, cards);
}

async function search(event) {
  event.preventDefault();
  const status = $('search-status');
  const query = $('query').value.trim();
  if (!query) return setStatus(status, 'Type a question first.', true);
  const k = Number($('k').value) || 5;
  const tokenK = Number($('token-k').value) || 64;
  const alpha = Number($('alpha').value);
  $('search-btn').disabled = true;
  setStatus(status, 'Searching…');
  try {
    const fused = await api('POST', `${bankPath()}/search`, {
      query,
      k,
      system: 'sparse-fusion',
      explain: true,
      tokenK,
      alpha: Number.isFinite(alpha) ? alpha : 0.5,
    });
    // Each result carries its pooled rank over the whole bank, however deep.
    const pooledRanks = new Map(fused.results.map((r) => [r.id, r.pooledRank]));
    render(fused.results, pooledRanks, query);
    setStatus(status, `${fused.results.length} results (sparse-fusion, tokenK ${tokenK}).`);
  } catch (error) {
    setStatus(status, `Search failed: ${error.message}`, true);
  } finally {
    $('search-btn').disabled = false;
  }
}

function init() {
  const key = $('key');
  key.value = sessionStorage.getItem(KEY_ITEM) ?? '';
  key.addEventListener('input', () => sessionStorage.setItem(KEY_ITEM, key.value));
  $('sample').addEventListener('click', () => {
    $('memories').value = SAMPLE.join('\n');
  });
  $('add-btn').addEventListener('click', () => void addMemories());
  $('search-form').addEventListener('submit', (event) => void search(event));
}

init();
