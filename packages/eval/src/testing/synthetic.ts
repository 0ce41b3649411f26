import { RelevanceLabels } from '@bfe/core';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import type { EvaluateInput } from '../evaluate.js';

/**
 * A seeded synthetic benchmark for tests: `nQueries` queries over `subtasks`, each with 5–80
 * candidates, 0–8 relevant ones (about 1 in 12 queries has none), and one ranking per system
 * that is a noisy version of the ideal order (systems differ in noise). Not exported from the
 * package.
 *
 * @example
 * const { inputs } = syntheticBenchmark(42, 60, ['s1', 's2'], ['pooled', 'sparse-fusion']);
 * evaluate(inputs.get('pooled')!);
 */
export function syntheticBenchmark(
  seed: number,
  nQueries: number,
  subtasks: readonly string[],
  systems: readonly string[],
): { inputs: Map<string, EvaluateInput> } {
  const rng = xoroshiro128plus(seed);
  const labels = new RelevanceLabels();
  const candidates = new Map<string, Set<string>>();
  const subtaskOf = new Map<string, string>();
  const runs = new Map<string, Map<string, string[]>>(systems.map((s) => [s, new Map()]));
  for (let q = 0; q < nQueries; q++) {
    const id = `q${q}`;
    subtaskOf.set(id, subtasks[uniformInt(rng, 0, subtasks.length - 1)] as string);
    const n = uniformInt(rng, 5, 80);
    const ids = Array.from({ length: n }, (_, i) => `${id}:m${i}`);
    candidates.set(id, new Set(ids));
    const nRel = uniformInt(rng, 0, 11) === 0 ? 0 : uniformInt(rng, 1, 8);
    for (let r = 0; r < Math.min(nRel, n); r++)
      labels.add(id, ids[uniformInt(rng, 0, n - 1)] as string);
    systems.forEach((system, s) => {
      // Relevant memories get a bonus; the noise grows with the system's index.
      const scored = ids.map((m) => ({
        m,
        score:
          (labels.relevant(id).has(m) ? 3 : 0) + (uniformInt(rng, 0, 1000) / 1000) * (2 + 2 * s),
      }));
      scored.sort((a, b) => b.score - a.score || (a.m < b.m ? -1 : 1));
      // Some rankings also hold an id from another query (not a candidate).
      const ranked = scored.map((d) => d.m);
      if (uniformInt(rng, 0, 4) === 0)
        ranked.splice(uniformInt(rng, 0, ranked.length), 0, `q${q + 1}:m0`);
      runs.get(system)?.set(id, ranked);
    });
  }
  const inputs = new Map<string, EvaluateInput>();
  for (const system of systems) {
    inputs.set(system, {
      runs: runs.get(system) as Map<string, string[]>,
      labels,
      candidates,
      subtaskOf,
      subtasks,
    });
  }
  return { inputs };
}
