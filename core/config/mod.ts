export { defaultConfig, devLayer } from "./defaults.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export { buildConfig, formatForFile, mergeLayers, parseConfigText } from "./load.ts";
export type { ConfigFormat, ConfigSource } from "./load.ts";
export { validateConfig } from "./validate.ts";
export type {
  AddressesConfig,
  AgentConfig,
  ConfigLayer,
  DnsConfig,
  LimitsConfig,
  PerformanceConfig,
  PortsConfig,
  SoaConfig,
} from "./types.ts";
