import { fileURLToPath } from 'node:url';

// The house's import rules (../shared/docs/HOUSE.md), checked by `pnpm lint:deps`:
// data flows down the package table, a package imports only the packages above it and never
// an app, apps are never imported, and no module takes part in a cycle — type-only imports
// included (tsPreCompilationDeps).
/** What each package's files may import, besides themselves. */
const ALLOWED = {
  core: [],
  datasets: ['core'],
  split: ['core'],
  models: ['core'],
  encoder: ['core', 'models'],
  index: ['core'],
  // The Milvus backend of TokenIndex: its own room, so the gRPC SDK stays out of packages/index.
  'index-milvus': ['core', 'index'],
  scorer: ['core', 'index'],
  adapter: ['core', 'index'],
  eval: ['core'],
  store: ['core', 'models', 'encoder', 'index', 'index-milvus', 'scorer', 'adapter'],
  // The one home of the search backends (a store in process, or bfe serve over HTTP) that both
  // retrievers share: the store's types, and core's temporary directories in its test fixture.
  client: ['core', 'store'],
  // Thin retrievers: the shared client only (besides their framework's core, from npm).
  langchain: ['client'],
  llamaindex: ['client'],
};

const packageRules = Object.entries(ALLOWED).map(([name, allowed]) => ({
  name: `${name}-imports-only-${allowed.length === 0 ? 'itself' : allowed.join('-')}`,
  comment: `packages/${name} may import only ${allowed.length === 0 ? 'nothing of the workspace' : allowed.map((a) => `@bfe/${a}`).join(', ')} (HOUSE.md)`,
  severity: 'error',
  from: { path: `^packages/${name}/` },
  to: {
    path: '^(packages|apps)/',
    pathNot: [`^packages/${name}/`, ...allowed.map((a) => `^packages/${a}/`)],
  },
}));

export default {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    ...packageRules,
    {
      name: 'server-imports-only-store-core',
      comment: 'apps/server may import only @bfe/store and @bfe/core (HOUSE.md)',
      severity: 'error',
      from: { path: '^apps/server/' },
      to: {
        path: '^(packages|apps)/',
        pathNot: ['^apps/server/', '^packages/(store|core)/'],
      },
    },
    {
      name: 'apps-are-never-imported',
      comment:
        'An app composes; nothing imports an app except the app itself (and e2e tests of the runner).',
      severity: 'error',
      from: { path: '^(packages|apps)/', pathNot: '^apps/([^/]+)/' },
      to: { path: '^apps/' },
    },
    {
      name: 'configs-import-packages-by-name',
      comment:
        'configs/ reach the workspace through package names (@bfe/core …), never by a relative path into a package or app',
      severity: 'error',
      from: { path: '^configs/' },
      to: { path: '^(packages|apps)/', dependencyTypes: ['local'] },
    },
    {
      name: 'no-app-imports-another-app',
      severity: 'error',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/', pathNot: '^apps/$1/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: fileURLToPath(new URL('tsconfig.deps.json', import.meta.url)) },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['@bfe/source', 'import', 'types', 'node', 'default'],
      extensions: ['.ts', '.js', '.mjs', '.json'],
      mainFields: ['module', 'main', 'types'],
    },
    combinedDependencies: true,
    preserveSymlinks: false,
  },
};
