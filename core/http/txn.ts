// PUT /v1/txn: Consul's transaction API for KV operations
// (consul agent/txn_endpoint.go). Input is Consul's JSON; field names match
// case-insensitively, as Go's encoding/json does.
import { BadRequestError, TooLargeError } from "../errors.ts";
import type { Rpc, TxnKvOp, TxnKvVerb, TxnOp, TxnReply } from "../rpc/mod.ts";
import { decodeBase64 } from "./base64.ts";
import { parseQueryOptions, parseWriteOptions, setMetaHeaders } from "./blocking.ts";
import { dirEntryToJson, kvMaxValueBytes, type DirEntryJson } from "./kvs.ts";
import { jsonResponse, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

/** Most operations in one transaction (Consul maxTxnOps). */
export const maxTxnOps = 128;
/** Largest /v1/txn body (Consul txn_max_req_len default, 512 KiB). */
export const txnMaxRequestBytes = 512 * 1024;

const kvVerbs: ReadonlySet<string> = new Set<TxnKvVerb>([
  "set", "cas", "lock", "unlock", "get", "get-tree", "check-index", "check-session",
  "check-not-exists", "delete", "delete-tree", "delete-cas",
]);
const writeVerbs: ReadonlySet<string> = new Set<TxnKvVerb>([
  "set", "cas", "lock", "unlock", "delete", "delete-tree", "delete-cas",
]);

export interface TxnResponseJson {
  Results: { KV: DirEntryJson }[] | null;
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

/** Parse and check Consul's txn JSON into RPC ops; errors name the op and field. */
export function parseTxnOps(body: Uint8Array, options: { maxValueBytes?: number } = {}): TxnOp[] {
  const maxValueBytes = options.maxValueBytes ?? kvMaxValueBytes;
  let doc: unknown;
  try {
    doc = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
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
    const kv = field(opObj, "KV");
    if (kv === undefined || kv === null) {
      const other = Object.keys(opObj).filter((k) => opObj[k] !== null);
      throw new BadRequestError(
        other.length > 0
          ? `Failed to parse body: ${where}: only KV operations are supported, got "${other.join('", "')}"`
          : `Failed to parse body: ${where} has no "KV" object`,
      );
    }
    if (typeof kv !== "object" || Array.isArray(kv)) throw new BadRequestError(`Failed to parse body: ${where}.KV must be an object, got ${typeName(kv)}`);
    const kvObj = kv as Record<string, unknown>;
    const w = `${where}.KV`;
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
    const flags = uintField(kvObj, "Flags", w);
    if (flags !== undefined) op.flags = flags;
    const index = uintField(kvObj, "Index", w);
    if (index !== undefined) op.index = index;
    const session = stringField(kvObj, "Session", w);
    if (session) op.session = session;
    ops.push({ kv: op });
  });
  return ops;
}

export function txnReplyToJson(reply: TxnReply): TxnResponseJson {
  if (reply.errors.length > 0) {
    return { Results: null, Errors: reply.errors.map((e) => ({ OpIndex: e.opIndex, What: e.what })) };
  }
  return { Results: reply.results.length > 0 ? reply.results.map((r) => ({ KV: dirEntryToJson(r.kv) })) : null, Errors: null };
}

export function txnHandler(options: { rpc: Rpc; maxValueBytes?: number; maxRequestBytes?: number }): (req: HttpRequest) => Promise<HttpResponse> {
  const maxRequestBytes = options.maxRequestBytes ?? txnMaxRequestBytes;
  return async (req) => {
    if (req.body.length > maxRequestBytes) {
      throw new TooLargeError(`Request body (${req.body.length} bytes) too large: max size is ${maxRequestBytes} bytes (txn_max_req_len)`, maxRequestBytes);
    }
    const ops = parseTxnOps(req.body, options);
    const readOnly = ops.every((op) => !writeVerbs.has(op.kv.verb));
    // Read-only transactions are answered like reads (consul Txn.Read + setMeta).
    const query = readOnly ? parseQueryOptions(req) : undefined;
    const reply = await options.rpc.call("Txn.Apply", { ops, ...parseWriteOptions(req), ...(query ? { query } : {}) });
    const headers: Record<string, string> = {};
    if (reply.meta) setMetaHeaders(headers, reply.meta);
    return jsonResponse(txnReplyToJson(reply), { status: reply.errors.length > 0 ? 409 : 200, headers, pretty: wantsPretty(req) });
  };
}
