export { sharedDataDir } from './shared-data.js';
export { suiteTmpDir, tmpDir } from './tmp-dir.js';
export { ordinaryUserPrefix } from './ordinary-user.js';
export { jsTree } from './js-tree.js';
