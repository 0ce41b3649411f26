export { sharedDataDir } from './shared-data.js';
export { suiteTmpDir, tmpDir } from './tmp-dir.js';
