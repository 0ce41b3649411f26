import type { DatasetSummary } from '@bfe/datasets';
import type { Split } from '@bfe/core';

/** Human-readable summary of `bfe data inspect`. */
export function renderSummary(s: DatasetSummary): string {
  const lines = [
    `dataset     ${s.dataset}`,
    `memories    ${s.memories}`,
    `queries     ${s.queries}`,
    `qrels       ${s.qrels}`,
    `banks       ${s.banks}`,
    `candidates  per query: min ${s.candidatesPerQuery.min}, median ${s.candidatesPerQuery.median}, max ${s.candidatesPerQuery.max}`,
    `relevant    per query: min ${s.relevantPerQuery.min}, median ${s.relevantPerQuery.median}, max ${s.relevantPerQuery.max}`,
    'categories',
    ...Object.entries(s.categories).map(([k, v]) => `  ${k.padEnd(28)} ${v}`),
    ...section('repaired', s.repaired),
    ...section('unresolved', s.unresolved),
    ...section('dropped', s.dropped),
    `hash        ${s.benchmarkHash}`,
  ];
  return lines.join('\n');
}

/** Human-readable summary of `bfe data split`. */
export function renderSplit(split: Split, structure: { components: number }): string {
  const lines = [
    `dataset     ${split.dataset}`,
    `policy      ${split.policy}${split.diagnosticOnly ? '  (diagnostic only, not promotion-eligible)' : ''}`,
    `seed        ${split.seed}`,
    `components  ${structure.components}`,
    `unit        ${split.unit}`,
  ];
  for (const name of ['train', 'validation', 'test'] as const) {
    lines.push(
      `${name.padEnd(11)} ${String(split.unitCounts[name]).padStart(5)} units  ${String(split.queries[name].length).padStart(6)} queries  ${String(split.banks[name].length).padStart(6)} banks`,
    );
  }
  if (split.marks.length > 0) lines.push(`marks       ${split.marks.join(', ')}`);
  lines.push(`hash        ${split.hash}`);
  return lines.join('\n');
}

function section(title: string, counts: Record<string, number>): string[] {
  const entries = Object.entries(counts);
  if (entries.length === 0) return [`${title.padEnd(11)} none`];
  return [title, ...entries.map(([k, v]) => `  ${k.padEnd(28)} ${v}`)];
}
