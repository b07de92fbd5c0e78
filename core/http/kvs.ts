// /v1/kv/<key>: GET (get, ?recurse, ?keys), PUT, DELETE, translated to the
// KVS.* RPCs (consul agent/kvs_endpoint.go).
import { BadRequestError, TooLargeError } from "../errors.ts";
import { parseKvFlags, type DirEntry, type KvsApplyArgs, type Rpc } from "../rpc/mod.ts";
import { encodeBase64 } from "./base64.ts";
import { parseQueryOptions, parseUintParam, parseWriteOptions, setMetaHeaders } from "./blocking.ts";
import { HttpError } from "./http_error.ts";
import { jsonResponse, rawJsonNumber, wantsPretty, type HttpRequest, type HttpResponse } from "./types.ts";

export const kvPrefix = "/v1/kv/";
/** Largest KV value (Consul kv_max_value_size default, 512 KiB). */
export const kvMaxValueBytes = 512 * 1024;

/** Consul's JSON shape for a KV entry; `Session` only when a lock is held. */
export interface DirEntryJson {
  LockIndex: number;
  Key: string;
  Flags: number;
  Value: string | null;
  Session?: string;
  CreateIndex: number;
  ModifyIndex: number;
}

/** Flags above 2^53: the answer must write them with rawNumbers (see rawJsonNumber). */
export function hasBigFlags(e: DirEntry): boolean {
  return typeof e.flags === "string";
}

export function dirEntryToJson(e: DirEntry): DirEntryJson {
  const out: DirEntryJson = {
    LockIndex: e.lockIndex,
    Key: e.key,
    Flags: typeof e.flags === "string" ? rawJsonNumber(e.flags) : e.flags,
    Value: e.value && e.value.length > 0 ? encodeBase64(e.value) : null,
    CreateIndex: e.createIndex,
    ModifyIndex: e.modifyIndex,
  };
  if (e.session) {
    // Keep Consul's field order: Session sits between Value and CreateIndex.
    return { LockIndex: out.LockIndex, Key: out.Key, Flags: out.Flags, Value: out.Value, Session: e.session, CreateIndex: out.CreateIndex, ModifyIndex: out.ModifyIndex };
  }
  return out;
}

/**
 * Why a key is refused, or undefined. Consul's validateKVKey
 * (agent/kvs_endpoint.go) refuses control characters with a 400 naming the
 * character and its byte position; cairn refuses those (C0, DEL, C1) and
 * keeps the other characters older Consul versions and their users accept.
 */
export function kvKeyProblem(key: string): string | undefined {
  let pos = 0;
  for (const ch of key) {
    const c = ch.codePointAt(0)!;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) {
      const shown = `\\x${c.toString(16).padStart(2, "0")}`;
      return `key contains invalid character '${shown}' at position ${pos}: control characters are not allowed in keys`;
    }
    pos += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return undefined;
}

function missingKey(): never {
  throw new BadRequestError("Missing key name");
}

export function tooLargeError(sizeBytes: number, limitBytes: number): TooLargeError {
  return new TooLargeError(
    `Request body (${sizeBytes} bytes) too large: max size is ${limitBytes} bytes (kv_max_value_size)`,
    limitBytes,
  );
}

export interface KvsHandlerOptions {
  rpc: Rpc;
  maxValueBytes?: number;
}

/** One handler for every method on /v1/kv/ (the route table checks the method). */
export function kvsHandler(options: KvsHandlerOptions): (req: HttpRequest) => Promise<HttpResponse> {
  const { rpc } = options;
  const maxValueBytes = options.maxValueBytes ?? kvMaxValueBytes;

  async function get(req: HttpRequest, key: string): Promise<HttpResponse> {
    const query = parseQueryOptions(req);
    const headers: Record<string, string> = {};
    const pretty = wantsPretty(req);
    // Only blocking reads wait long enough to be worth cancelling.
    const callOpts = query.minQueryIndex > 0 && req.signal ? { signal: req.signal } : undefined;
    if (req.query.has("keys")) {
      // Consul still honours its historic misspelling "seperator".
      const separator = req.query.get("separator") ?? req.query.get("seperator") ?? "";
      const reply = await rpc.call("KVS.ListKeys", { prefix: key, separator, query }, callOpts);
      setMetaHeaders(headers, reply.meta);
      // Not found is not reported for the root: an empty store lists [].
      if (reply.keys.length === 0 && key !== "") return notFound(headers);
      return jsonResponse(reply.keys, { headers, pretty });
    }
    const recurse = req.query.has("recurse");
    if (!recurse && key === "") missingKey();
    const reply = recurse
      ? await rpc.call("KVS.List", { prefix: key, query }, callOpts)
      : await rpc.call("KVS.Get", { key, query }, callOpts);
    setMetaHeaders(headers, reply.meta);
    if (reply.entries.length === 0) return notFound(headers);
    if (!recurse && req.query.has("raw")) {
      headers["Content-Type"] = "text/plain";
      headers["X-Content-Type-Options"] = "nosniff";
      return { status: 200, headers, body: reply.entries[0]!.value ?? new Uint8Array(0) };
    }
    return jsonResponse(reply.entries.map(dirEntryToJson), { headers, pretty, rawNumbers: reply.entries.some(hasBigFlags) });
  }

  async function put(req: HttpRequest, key: string): Promise<HttpResponse> {
    if (key === "") missingKey();
    const q = req.query;
    const flagsText = req.query.get("flags");
    const flags = flagsText === null ? undefined : parseKvFlags(flagsText);
    if (flagsText !== null && flags === undefined) throw new BadRequestError(`Invalid flags "${flagsText}": must be an unsigned 64-bit integer`);
    const cas = parseUintParam(req, "cas");
    const hasAcquire = q.has("acquire");
    const hasRelease = q.has("release");
    if (cas !== undefined && (hasAcquire || hasRelease)) {
      throw new BadRequestError(`Conflicting flags: "cas" cannot be combined with "${hasAcquire ? "acquire" : "release"}"`);
    }
    if (hasAcquire && hasRelease) throw new BadRequestError(`Conflicting flags: "acquire" cannot be combined with "release"`);
    if (req.body.length > maxValueBytes) throw tooLargeError(req.body.length, maxValueBytes);
    const entry: KvsApplyArgs["entry"] = { key, value: req.body, flags: flags ?? 0 };
    let op: KvsApplyArgs["op"] = "set";
    if (cas !== undefined) {
      op = "cas";
      entry.modifyIndex = cas;
    } else if (hasAcquire || hasRelease) {
      const name = hasAcquire ? "acquire" : "release";
      const session = q.get(name) ?? "";
      if (session === "") throw new BadRequestError(`Missing session ID: "?${name}" needs a session ID`);
      op = hasAcquire ? "lock" : "unlock";
      entry.session = session;
    }
    const reply = await rpc.call("KVS.Apply", { op, entry, ...parseWriteOptions(req) });
    return jsonResponse(reply.ok);
  }

  async function del(req: HttpRequest, key: string): Promise<HttpResponse> {
    let op: KvsApplyArgs["op"] = "delete";
    if (req.query.has("recurse")) op = "delete-tree";
    else if (key === "") missingKey();
    const entry: KvsApplyArgs["entry"] = { key };
    const cas = parseUintParam(req, "cas");
    if (cas !== undefined) {
      if (key === "") missingKey();
      op = "delete-cas";
      entry.modifyIndex = cas;
    }
    const reply = await rpc.call("KVS.Apply", { op, entry, ...parseWriteOptions(req) });
    // Only a CAS delete can answer false (consul KVSDelete).
    return jsonResponse(op === "delete-cas" ? reply.ok : true);
  }

  return async (req) => {
    const key = req.path.startsWith(kvPrefix) ? req.path.slice(kvPrefix.length) : "";
    const problem = kvKeyProblem(key);
    if (problem) throw new BadRequestError(problem);
    switch (req.method) {
      case "GET":
        return await get(req, key);
      case "PUT":
        return await put(req, key);
      case "DELETE":
        return await del(req, key);
      default:
        throw new HttpError(405, `method ${req.method} not allowed`, { headers: { Allow: "GET,PUT,DELETE" } });
    }
  };
}

function notFound(headers: Record<string, string>): HttpResponse {
  headers["Content-Type"] = "application/json";
  return { status: 404, headers, body: "" };
}
