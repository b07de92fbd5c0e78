export { AntiEntropy, scaleFactor, scaleThreshold } from "./anti_entropy.ts";
export type { AntiEntropyOptions } from "./anti_entropy.ts";
export { catalogClientFromRpc, localCheckToInput, nodeServiceToLocal } from "./catalog_client.ts";
export type { CatalogClient, CatalogRegistration, NodeInfo, RemoteCheck } from "./catalog_client.ts";
export { decodeCheckDefinition, decodeServiceDefinition, serviceCheckDefinitions } from "../service_defs/definition.ts";
export {
  decodeConfigDefinitions,
  defaultNodeMaintReason,
  defaultServiceMaintReason,
  LocalAgent,
  ScriptChecksDisabledError,
} from "./local_agent.ts";
export type { AddOptions, ConfigDefinitions, LocalAgentOptions } from "./local_agent.ts";
export { FileDefinitionStore, MemoryDefinitionStore } from "./persist.ts";
export type { CheckStateRecord, DefinitionStore } from "./persist.ts";
export { LocalState, sameService } from "./state.ts";
export type { LocalStateOptions, SyncSummary } from "./state.ts";
export {
  aggregateStatus,
  consulServiceId,
  healthStatuses,
  isHealthStatus,
  nodeMaintCheckId,
  serfCheckId,
  serviceMaintPrefix,
} from "../service_defs/types.ts";
export type {
  AggregatedStatus,
  CheckDefinition,
  CheckKind,
  CheckType,
  DefinitionSource,
  HealthStatus,
  LocalCheck,
  LocalService,
  ServiceDefinition,
} from "../service_defs/types.ts";
