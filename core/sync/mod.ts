// `cairn sync` (Consul-Terraform-Sync's job): config, task model, the pure
// scheduler, rendering; the runtime (watchers, drivers, run queue, API) is
// in the *_node.ts files beside them.
export { defaultBufferPeriod, parseSyncConfig, parseTaskDocument } from "./config.ts";
export type { BufferPeriod, Condition, ConfigSource, ModuleInput, SyncConfig, TaskConfig } from "./config.ts";
export { nextCronTime, parseCron } from "./cron.ts";
export type { CronSchedule } from "./cron.ts";
export { canonicalJson, renderHash, renderHealthEntries, renderKvEntries } from "./render.ts";
export type { RenderedInputs, RenderedService } from "./render.ts";
export { SyncScheduler } from "./scheduler.ts";
export type { RunOrder, SchedulerInput, SchedulerReady, TaskSpec, TaskView, Trigger } from "./scheduler.ts";
export { moduleVariables, taskDependencies, taskSpec } from "./task.ts";
export type { Dependency } from "./task.ts";
