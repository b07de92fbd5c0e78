export { decodeCheckDefinition, decodeServiceDefinition, normalizeCheckType, serviceCheckDefinitions } from "./definition.ts";
export {
  aggregateStatus,
  consulServiceId,
  healthStatuses,
  isHealthStatus,
  nodeMaintCheckId,
  serfCheckId,
  serviceMaintPrefix,
} from "./types.ts";
export type {
  AggregatedStatus,
  CheckDefinition,
  CheckKind,
  CheckType,
  DefinitionSource,
  HealthStatus,
  LocalCheck,
  LocalService,
  ServiceAddress,
  ServiceDefinition,
  ServiceWeights,
} from "./types.ts";
