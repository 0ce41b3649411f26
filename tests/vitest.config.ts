import { fileURLToPath } from 'node:url';
import { packageProject } from '../configs/vitest.shared.ts';

export default packageProject('e2e', {
  realData: true,
  isolate: true,
  globalSetup: [fileURLToPath(new URL('./run-dir.setup.ts', import.meta.url))],
});
