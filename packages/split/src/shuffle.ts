/**
 * The splits' shuffle is the workspace's one seeded shuffle (`@bfe/core`'s `seededShuffle`,
 * pure-rand xoroshiro128plus with unbiased `uniformInt` draws), with its seed check.
 */
export { MAX_SEED, checkSeed, seededShuffle } from '@bfe/core';
