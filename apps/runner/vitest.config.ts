import { defaultServerConditions } from 'vite';
import { defineProject } from 'vitest/config';
import { packageProject } from '../../configs/vitest.shared.ts';

// Vitest passes the server conditions to Node as `--conditions`; with `module` among them the
// Milvus SDK's CommonJS `require` of @aws-sdk picks its ESM build, which Node cannot load.
export default defineProject({
  ...packageProject('runner'),
  ssr: {
    resolve: {
      conditions: ['@bfe/source', ...defaultServerConditions.filter((c) => c !== 'module')],
    },
  },
});
