/**
 * Two of the Milvus 2.3.5 standalone server's internal timings, which set how long a test
 * waits on it rather than what it answers.
 */
export interface MilvusTimings {
  /**
   * `proxy.timeTickInterval` in ms (Milvus: 200). A Strong-consistency search waits until the
   * query node has seen a time tick after the request, so each search waits about this long.
   */
  readonly timeTickMs?: number;
  /**
   * `common.session.ttl` in s (Milvus: 30). After a SIGKILL the restarted server waits for its
   * dead components' etcd sessions to expire before it serves the collection again.
   */
  readonly sessionTtlS?: number;
}

/**
 * The timings the test servers run with: a Strong search waits for a 50 ms tick instead of a
 * 200 ms one, and a SIGKILLed server's old sessions expire after 10 s instead of 30.
 */
export const TEST_TIMINGS: MilvusTimings = { timeTickMs: 50, sessionTtlS: 10 };

/** The lines of the server's `milvus.yaml` template to replace, each found there exactly once. */
export function timingEdits(timings: MilvusTimings = {}): [old: string, new: string][] {
  const edits: [string, string][] = [];
  const { timeTickMs, sessionTtlS } = timings;
  for (const [name, value] of Object.entries(timings)) {
    if (value !== undefined && !(Number.isInteger(value) && value > 0))
      throw new RangeError(`milvus-server: timings.${name} must be a positive integer`);
  }
  if (timeTickMs !== undefined)
    edits.push(['\n  timeTickInterval: 200 ', `\n  timeTickInterval: ${timeTickMs} `]);
  if (sessionTtlS !== undefined) edits.push(['\n    ttl: 30 ', `\n    ttl: ${sessionTtlS} `]);
  return edits;
}
