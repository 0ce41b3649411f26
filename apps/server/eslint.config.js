// @ts-check
import shared from '../../configs/eslint.config.js';

// The CLI is the one package that prints: library code reports through return values.
export default [...shared, { files: ['src/**/*.ts'], rules: { 'no-console': 'off' } }];
