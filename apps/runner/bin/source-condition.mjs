// A module resolve hook that adds the workspace's `@bfe/source` export condition, so the
// workspace packages resolve to their TypeScript sources, as `node --conditions=@bfe/source`
// does on the command line.
export async function resolve(specifier, context, nextResolve) {
  const conditions = context.conditions.includes('@bfe/source')
    ? context.conditions
    : [...context.conditions, '@bfe/source'];
  return nextResolve(specifier, { ...context, conditions });
}
