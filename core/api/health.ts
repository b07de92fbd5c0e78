// /v1/health lives beside /v1/catalog in catalog.ts (they share shapes and list options).
export { Health } from "./catalog.ts";
export type { HealthCheckJson, ServiceEntry } from "./catalog.ts";
