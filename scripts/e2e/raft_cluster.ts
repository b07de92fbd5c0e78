// Server clusters live in harness.ts (the one e2e launcher); this re-export
// keeps the older import path working.
export { agreedLeader, bin, getJson, makeCluster, startCairn, waitForLeader } from "./harness.ts";
export type { Cluster, ClusterOptions, ServerSpec } from "./harness.ts";
