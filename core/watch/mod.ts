// Watch plans: a view of the catalog, KV store or events, and a handler run on each change.
export { runWatchPlan, watchOnce, watchQuery, watchRetryMs, watchTypeParams, watchTypes, watchWaitMs } from "./plan.ts";
export type { WatchClient, WatchParams, WatchPlanOptions, WatchQuery, WatchType } from "./plan.ts";
