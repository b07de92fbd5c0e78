// HCL 1 (and JSON) parsing with positions: Consul's agent config files today,
// ACL policy rules and sync configs later. See hcl.ts for the value shape.
export { HclSyntaxError } from "./document.ts";
export type { ParsedDocument, SourcePosition } from "./document.ts";
export { parseHcl } from "./hcl.ts";
export { parseJsonDocument } from "./json.ts";
