export { defaultConfig, devLayer } from "./defaults.ts";
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
