// The workspace root links the packages its tools and configs import (`@bfe/core` and
// `@bfe/datasets` for configs/vitest.data-setup.ts, `@bfe/runner` for node_modules/.bin/bfe)
// here, at install time, instead of in package.json: turbo folds the files of every workspace
// package the root package.json names into every task's hash, so one changed package would
// rerun every package's cached tests.
const ROOT_LINKS = ['@bfe/core', '@bfe/datasets', '@bfe/runner'];

function readPackage(pkg) {
  if (pkg.name === 'bfe-monorepo') {
    pkg.devDependencies = { ...pkg.devDependencies };
    for (const name of ROOT_LINKS) pkg.devDependencies[name] = 'workspace:*';
  }
  return pkg;
}

export const hooks = { readPackage };
