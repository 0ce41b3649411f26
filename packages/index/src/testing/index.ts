export { randomBank, rng, unitVectors } from './random.js';
export { referenceDot, referenceTopK } from './reference.js';
export type { ReferenceBank } from './reference.js';
