/**
 * The command prefix that runs what follows as a user that is not root: nothing where this
 * process is not root; under root, nobody in a user namespace of its own (`unshare --user
 * --map-user=65534`: no capability, so file modes bind it, yet still the owner of root's files,
 * so it reads a checkout wherever it is). Permission tests run the same case either way.
 *
 * @example
 * execFile(...[...ordinaryUserPrefix(), process.execPath, '-e', script]);
 */
export function ordinaryUserPrefix(): string[] {
  return process.getuid?.() === 0
    ? ['unshare', '--user', '--map-user=65534', '--map-group=65534']
    : [];
}
