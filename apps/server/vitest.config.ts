import { packageProject } from '../../configs/vitest.shared.ts';

export default packageProject('server');
