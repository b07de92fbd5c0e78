export { AliasCheck, aliasResult } from "./alias.ts";
export type { AliasCheckOptions } from "./alias.ts";
export { httpCheckUserAgent, httpProbe } from "./http.ts";
export { CheckManager } from "./manager.ts";
export type { CheckManagerOptions } from "./manager.ts";
export {
  capOutput,
  defaultCheckTimeoutMs,
  defaultOutputMaxSize,
  IntervalRunner,
  minCheckIntervalMs,
  StatusHandler,
} from "./runner.ts";
export type { CheckNotify, CheckRunner, Probe, ProbeResult } from "./runner.ts";
export { defaultScriptTimeoutMs, scriptProbe, scriptTimeoutOutput } from "./script.ts";
export { tcpProbe } from "./tcp.ts";
export { TtlCheck } from "./ttl.ts";
