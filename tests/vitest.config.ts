import { packageProject } from '../configs/vitest.shared.ts';

export default packageProject('e2e', { realData: true, isolate: true });
