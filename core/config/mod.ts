export { defaultConfig, devLayer } from "./defaults.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export { AGENT_KEYS, CHECK_KEYS, keyRows, SERVICE_KEYS } from "./keys.ts";
export type { KeyRow, KeySpec, KeyStatus, KeyTable } from "./keys.ts";
export { buildConfig, configFormats, formatForFile, hclSnippetName, mergeLayers, parseConfigSource, parseConfigText } from "./load.ts";
export type { ConfigFormat, ConfigSource } from "./load.ts";
export { validateConfig } from "./validate.ts";
export type {
  AddressesConfig,
  AgentConfig,
  ConfigLayer,
  ConfigWarning,
  DnsConfig,
  LimitsConfig,
  PerformanceConfig,
  PortsConfig,
  SoaConfig,
} from "./types.ts";
export { keyCounts, keysMarkdown } from "./keys_markdown.ts";
