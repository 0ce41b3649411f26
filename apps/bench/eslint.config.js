// @ts-check
import shared from '../../configs/eslint.config.js';

// The shared rules, so that `eslint .` runs from this folder as in apps/runner.
export default [...shared];
