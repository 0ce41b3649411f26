export { suiteTmpDir, tmpDir } from './tmp-dir.js';
