/**
 * The privileges a bfe user needs on a Milvus server with authorization on (Milvus 2.3 RBAC:
 * object type, object name, privilege), for one role: create and describe the token collection,
 * index and load it, insert, flush, delete, search and query its rows. `*` as the collection
 * name grants them on every collection; name bfe's collection to grant on it alone.
 * @example
 * for (const [object, objectName, privilegeName] of MILVUS_GRANTS)
 *   await admin.grantRolePrivilege({ roleName: 'bfe', object, objectName, privilegeName });
 */
export const MILVUS_GRANTS: readonly (readonly ['Global' | 'Collection', string, string])[] = [
  ['Global', '*', 'CreateCollection'],
  ['Global', '*', 'DescribeCollection'],
  ['Global', '*', 'ShowCollections'],
  ['Collection', '*', 'CreateIndex'],
  ['Collection', '*', 'IndexDetail'],
  ['Collection', '*', 'Load'],
  ['Collection', '*', 'GetLoadState'],
  ['Collection', '*', 'GetLoadingProgress'],
  ['Collection', '*', 'Insert'],
  ['Collection', '*', 'Delete'],
  ['Collection', '*', 'Flush'],
  ['Collection', '*', 'GetFlushState'],
  ['Collection', '*', 'Search'],
  ['Collection', '*', 'Query'],
];
