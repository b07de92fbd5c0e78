// PUT /v1/txn: Consul's transaction API (consul agent/txn_endpoint.go): KV,
// Node, Service and Check operations in one atomic transaction. Input is
// Consul's JSON; field names match case-insensitively, as Go's encoding/json
// does.
import { BadRequestError, TooLargeError } from "../errors.ts";
import { isKvFlags, parseKvFlags, type Rpc, type TxnCatalogVerb, type TxnKvOp, type TxnKvVerb, type TxnOp, type TxnReply, type TxnResult } from "../rpc/mod.ts";
import { healthCheckToJson, nodeServiceToJson, nodeToJson } from "../state/catalog_json.ts";
import { txnOpVerb } from "../state/txn_ops.ts";
import { decodeCheck, decodeService } from "./catalog.ts";
import { decodeBase64 } from "./base64.ts";
import { parseQueryOptions, parseWriteOptions, setMetaHeaders } from "./blocking.ts";
import { dirEntryToJson, hasBigFlags, kvMaxValueBytes, type DirEntryJson } from "./kvs.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/** Most operations in one transaction (Consul maxTxnOps). */
export const maxTxnOps = 128;
/** Largest /v1/txn body (Consul txn_max_req_len default, 512 KiB). */
export const txnMaxRequestBytes = 512 * 1024;

const kvVerbs: ReadonlySet<string> = new Set<TxnKvVerb>([
  "set", "cas", "lock", "unlock", "get", "get-or-empty", "get-tree", "check-index", "check-session",
  "check-not-exists", "delete", "delete-tree", "delete-cas",
]);
const catalogVerbs: ReadonlySet<string> = new Set<TxnCatalogVerb>(["set", "cas", "get", "delete", "delete-cas"]);
const writeVerbs: ReadonlySet<string> = new Set<TxnKvVerb>([
  "set", "cas", "lock", "unlock", "delete", "delete-tree", "delete-cas",
]);

export interface TxnResponseJson {
  Results: Array<{ KV: DirEntryJson } | { Node: unknown } | { Service: unknown } | { Check: unknown }> | null;
  Errors: { OpIndex: number; What: string }[] | null;
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}

/** Field lookup ignoring case, as Go's encoding/json. */
function field(obj: Record<string, unknown>, name: string): unknown {
  if (name in obj) return obj[name];
  const lower = name.toLowerCase();
  for (const k of Object.keys(obj)) if (k.toLowerCase() === lower) return obj[k];
  return undefined;
}

function uintField(obj: Record<string, unknown>, name: string, where: string): number | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) {
    throw new BadRequestError(`Failed to parse body: ${where}.${name} must be a non-negative integer, got ${JSON.stringify(v)}`);
  }
  return v;
}

function stringField(obj: Record<string, unknown>, name: string, where: string): string | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw new BadRequestError(`Failed to parse body: ${where}.${name} must be a string, got ${typeName(v)}`);
  return v;
}

function parseKvOp(kvObj: Record<string, unknown>, w: string, maxValueBytes: number): TxnKvOp {
  const verb = stringField(kvObj, "Verb", w);
  if (verb === undefined || verb === "") throw new BadRequestError(`Failed to parse body: ${w}.Verb is missing`);
  if (!kvVerbs.has(verb)) {
    throw new BadRequestError(`Failed to parse body: ${w}.Verb "${verb}" is not a KV verb (one of ${[...kvVerbs].join(", ")})`);
  }
  const key = stringField(kvObj, "Key", w) ?? "";
  const op: TxnKvOp = { verb: verb as TxnKvVerb, key };
  const valueText = stringField(kvObj, "Value", w);
  if (valueText !== undefined) {
    const value = decodeBase64(valueText);
    if (value === undefined) throw new BadRequestError(`Failed to parse body: ${w}.Value is not valid base64`);
    if (value.length > maxValueBytes) {
      throw new TooLargeError(`Value for key "${key}" is too large (${value.length} > ${maxValueBytes} bytes)`, maxValueBytes);
    }
    op.value = value;
  }
  const flagsRaw = field(kvObj, "Flags");
  if (flagsRaw !== undefined && flagsRaw !== null) {
    // A uint64 above 2^53 arrives as digits (see bigFlags below); a number here is a safe integer.
    const flags = typeof flagsRaw === "string" && flagsRaw.startsWith(bigFlagsTag) ? parseKvFlags(flagsRaw.slice(bigFlagsTag.length)) : typeof flagsRaw === "number" && isKvFlags(flagsRaw) ? flagsRaw : undefined;
    if (flags === undefined) {
      const shown = typeof flagsRaw === "string" && flagsRaw.startsWith(bigFlagsTag) ? flagsRaw.slice(bigFlagsTag.length) : JSON.stringify(flagsRaw);
      throw new BadRequestError(`Failed to parse body: ${w}.Flags must be a non-negative integer, got ${shown}`);
    }
    op.flags = flags;
  }
  const index = uintField(kvObj, "Index", w);
  if (index !== undefined) op.index = index;
  const session = stringField(kvObj, "Session", w);
  if (session) op.session = session;
  return op;
}

function objectField(obj: Record<string, unknown>, name: string, where: string): Record<string, unknown> {
  const v = field(obj, name);
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new BadRequestError(`Failed to parse body: ${where}.${name} must be an object, got ${typeName(v)}`);
  return v as Record<string, unknown>;
}

function stringMapField(obj: Record<string, unknown>, name: string, where: string): Record<string, string> | undefined {
  const v = field(obj, name);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v) || !Object.values(v).every((x) => typeof x === "string")) {
    throw new BadRequestError(`Failed to parse body: ${where}.${name} must be a map of strings`);
  }
  return { ...(v as Record<string, string>) };
}

/** A Node, Service or Check op (consul convertOps): the catalog's JSON, plus ModifyIndex for cas and delete-cas. */
function parseCatalogOp(kind: "Node" | "Service" | "Check", o: Record<string, unknown>, w: string): TxnOp {
  const verb = stringField(o, "Verb", w);
  if (verb === undefined || verb === "") throw new BadRequestError(`Failed to parse body: ${w}.Verb is missing`);
  if (!catalogVerbs.has(verb)) {
    throw new BadRequestError(`Failed to parse body: ${w}.Verb "${verb}" is not a ${kind} verb (one of ${[...catalogVerbs].join(", ")})`);
  }
  const v = verb as TxnCatalogVerb;
  if (kind === "Node") {
    const n = objectField(o, "Node", w);
    const nw = `${w}.Node`;
    const node = stringField(n, "Node", nw) ?? "";
    const id = stringField(n, "ID", nw);
    if (node === "" && !id) throw new BadRequestError(`Failed to parse body: ${nw} needs a Node name or an ID`);
    const out: NonNullable<TxnOp["node"]>["node"] = { node };
    if (id) out.id = id;
    const address = stringField(n, "Address", nw);
    if (address !== undefined) out.address = address;
    const dc = stringField(n, "Datacenter", nw);
    if (dc !== undefined) out.datacenter = dc;
    const tagged = stringMapField(n, "TaggedAddresses", nw);
    if (tagged) out.taggedAddresses = tagged;
    const meta = stringMapField(n, "Meta", nw);
    if (meta) out.meta = meta;
    const mi = uintField(n, "ModifyIndex", nw);
    if (mi !== undefined) out.modifyIndex = mi;
    return { node: { verb: v, node: out } };
  }
  if (kind === "Service") {
    const node = stringField(o, "Node", w) ?? "";
    if (node === "") throw new BadRequestError(`Failed to parse body: ${w}.Node is missing: a service operation names its node`);
    const so = objectField(o, "Service", w);
    const service: NonNullable<TxnOp["service"]>["service"] = decodeService(so);
    if (!service.service && !service.id) throw new BadRequestError(`Failed to parse body: ${w}.Service needs a Service name or an ID`);
    const mi = uintField(so, "ModifyIndex", `${w}.Service`);
    if (mi !== undefined) service.modifyIndex = mi;
    return { service: { verb: v, node, service } };
  }
  const co = objectField(o, "Check", w);
  const decoded = decodeCheck(co, `${w}.Check`);
  const node = decoded.node ?? "";
  if (node === "") throw new BadRequestError(`Failed to parse body: ${w}.Check.Node is missing: a check operation names its node`);
  if (!decoded.checkId && !decoded.name) throw new BadRequestError(`Failed to parse body: ${w}.Check needs a CheckID or a Name`);
  const check: NonNullable<TxnOp["check"]>["check"] = { ...decoded, node };
  const mi = uintField(co, "ModifyIndex", `${w}.Check`);
  if (mi !== undefined) check.modifyIndex = mi;
  return { check: { verb: v, check } };
}

/** JSON.parse rounds integers above 2^53: KV flags that long are quoted first, so their digits survive. */
function bigFlags(text: string): string {
  return text.includes("lags") ? text.replace(/("[Ff]lags"\s*:\s*)(\d{16,})(?=\s*[,}\]])/g, '$1"\\u0000#$2"') : text;
}
/** What a quoted long Flags starts with after JSON.parse (a NUL no client sends). */
const bigFlagsTag = "\u0000#";

/** Parse and check Consul's txn JSON into RPC ops; errors name the op and field. */
export function parseTxnOps(body: Uint8Array, options: { maxValueBytes?: number } = {}): TxnOp[] {
  const maxValueBytes = options.maxValueBytes ?? kvMaxValueBytes;
  let doc: unknown;
  try {
    doc = JSON.parse(bigFlags(new TextDecoder("utf-8", { fatal: true }).decode(body)));
  } catch (err) {
    throw new BadRequestError(`Failed to parse body: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (doc === null) return [];
  if (!Array.isArray(doc)) throw new BadRequestError(`Failed to parse body: expected a JSON array of operations, got ${typeName(doc)}`);
  if (doc.length > maxTxnOps) {
    throw new TooLargeError(`Transaction contains too many operations (${doc.length} > ${maxTxnOps})`, maxTxnOps);
  }
  const ops: TxnOp[] = [];
  doc.forEach((raw: unknown, i: number) => {
    const where = `operation ${i}`;
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new BadRequestError(`Failed to parse body: ${where} must be an object such as {"KV":{...}}, got ${typeName(raw)}`);
    }
    const opObj = raw as Record<string, unknown>;
    const kinds = (["KV", "Node", "Service", "Check"] as const).filter((k) => { const v = field(opObj, k); return v !== undefined && v !== null; });
    if (kinds.length === 0) {
      const other = Object.keys(opObj).filter((k) => opObj[k] !== null);
      throw new BadRequestError(
        other.length > 0
          ? `Failed to parse body: ${where}: "${other.join('", "')}" operations are not supported (KV, Node, Service and Check are)`
          : `Failed to parse body: ${where} has no "KV", "Node", "Service" or "Check" object`,
      );
    }
    if (kinds.length > 1) throw new BadRequestError(`Failed to parse body: ${where} has more than one operation (${kinds.join(", ")}): one per entry`);
    const kind = kinds[0]!;
    const body = field(opObj, kind);
    if (typeof body !== "object" || Array.isArray(body)) throw new BadRequestError(`Failed to parse body: ${where}.${kind} must be an object, got ${typeName(body)}`);
    const w = `${where}.${kind}`;
    const fields = body as Record<string, unknown>;
    if (kind === "KV") ops.push({ kv: parseKvOp(fields, w, maxValueBytes) });
    else ops.push(parseCatalogOp(kind, fields, w));
  });
  return ops;
}

function resultJson(r: TxnResult): TxnResponseJson["Results"] extends Array<infer T> | null ? T : never {
  if (r.kv) return { KV: dirEntryToJson(r.kv) };
  if (r.node) return { Node: nodeToJson(r.node) };
  if (r.service) return { Service: nodeServiceToJson(r.service) };
  return { Check: r.check ? healthCheckToJson(r.check) : null };
}

export function txnReplyToJson(reply: TxnReply): TxnResponseJson {
  if (reply.errors.length > 0) {
    return { Results: null, Errors: reply.errors.map((e) => ({ OpIndex: e.opIndex, What: e.what })) };
  }
  return { Results: reply.results.length > 0 ? reply.results.map(resultJson) : null, Errors: null };
}

export function txnHandler(options: { rpc: Rpc; maxValueBytes?: number; maxRequestBytes?: number }): (req: HttpRequest) => Promise<HttpResponse> {
  const maxRequestBytes = options.maxRequestBytes ?? txnMaxRequestBytes;
  return async (req) => {
    if (req.body.length > maxRequestBytes) {
      throw new TooLargeError(`Request body (${req.body.length} bytes) too large: max size is ${maxRequestBytes} bytes (txn_max_req_len)`, maxRequestBytes);
    }
    const ops = parseTxnOps(req.body, options);
    const readOnly = ops.every((op) => !writeVerbs.has(txnOpVerb(op) as string));
    // Read-only transactions are answered like reads (consul Txn.Read + setMeta).
    const query = readOnly ? parseQueryOptions(req) : undefined;
    const reply = await options.rpc.call("Txn.Apply", { ops, ...parseWriteOptions(req), ...(query ? { query } : {}) });
    const headers: Record<string, string> = {};
    if (reply.meta) setMetaHeaders(headers, reply.meta);
    const rawNumbers = reply.results.some((r) => r.kv !== undefined && hasBigFlags(r.kv));
    return jsonResponse(txnReplyToJson(reply), { status: reply.errors.length > 0 ? 409 : 200, headers, pretty: wantsPretty(req), rawNumbers });
  };
}
