// The `watches` list, checked as Consul checks it when the agent starts
// (api/watch watch.go ParseExempt, funcs.go, agent/agent.go makeWatchPlan
// and reloadWatches), but at load time, so `cairn validate` and a reload
// refuse a bad watch with the file and line. Messages keep Consul's words.
import { ConfigError } from "../errors.ts";
import { watchQuery, watchTypeParams, watchTypes, type WatchType } from "../watch/plan.ts";
import { parseDuration } from "./duration.ts";
import type { KeyTable } from "./keys.ts";
import type { WatchConfig, WatchHttpHandlerConfig } from "./types.ts";

export interface WatchDecodeCtx {
  file: string;
  lineOf(container: object, key: string | number): number | undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

class WatchError extends Error {
  constructor(
    message: string,
    readonly key?: string,
  ) {
    super(message);
  }
}

function stringOf(obj: Record<string, unknown>, k: string, name: string): string {
  const v = obj[k];
  if (typeof v !== "string") throw new WatchError(`Expecting ${name} to be a string`, k);
  return v;
}

function boolOf(obj: Record<string, unknown>, k: string, name: string): boolean {
  const v = obj[k];
  if (typeof v !== "boolean") throw new WatchError(`Expecting ${name} to be a boolean`, k);
  return v;
}

function stringsOf(obj: Record<string, unknown>, k: string, name: string): string[] {
  const v = obj[k];
  if (typeof v === "string") return [v];
  if (!Array.isArray(v)) throw new WatchError(`Expecting ${name} to be a string or []string`, k);
  return v.map((s, i) => {
    if (typeof s !== "string") throw new WatchError(`Index ${i} of ${name} expected to be string`, k);
    return s;
  });
}

/** The key of `table` a key as written names (exact, else ignoring case). */
function canonical(table: KeyTable, key: string): string | undefined {
  if (Object.hasOwn(table, key)) return key;
  return Object.keys(table).find((n) => n.toLowerCase() === key.toLowerCase());
}

function httpConfig(v: unknown, table: KeyTable): WatchHttpHandlerConfig {
  if (!isPlainObject(v)) throw new WatchError("Failed to parse 'http_handler_config': expected an object", "http_handler_config");
  const out: WatchHttpHandlerConfig = { path: "", method: "POST", header: {}, timeoutMs: 10_000, tlsSkipVerify: false };
  for (const [k, value] of Object.entries(v)) {
    const name = canonical(table, k);
    const fail = (why: string): never => {
      throw new WatchError(`Failed to parse 'http_handler_config': ${why}`, "http_handler_config");
    };
    switch (name) {
      case "path":
      case "method":
        if (typeof value !== "string") fail(`'${name}' expected a string`);
        if (name === "path") out.path = value as string;
        else if (value !== "") out.method = (value as string).toUpperCase();
        break;
      case "timeout": {
        const ms = typeof value === "string" ? parseDuration(value) : undefined;
        if (ms === undefined) fail(`Failed to parse timeout: "${String(value)}" is not a duration such as "10s"`);
        out.timeoutMs = ms!;
        break;
      }
      case "tls_skip_verify":
        if (typeof value !== "boolean") fail("'tls_skip_verify' expected true or false");
        out.tlsSkipVerify = value as boolean;
        break;
      case "header": {
        if (!isPlainObject(value)) fail("'header' expected an object of lists of strings");
        for (const [h, vals] of Object.entries(value as Record<string, unknown>)) {
          const list = typeof vals === "string" ? [vals] : vals;
          if (!Array.isArray(list) || !list.every((x) => typeof x === "string")) fail(`'header.${h}' expected a list of strings`);
          out.header[h] = [...(list as string[])];
        }
        break;
      }
      default:
        fail(`'${k}' has invalid keys`);
    }
  }
  if (out.path === "") throw new WatchError("Failed to parse 'http_handler_config': Requires 'path' to be set", "http_handler_config");
  return out;
}

/** One watch as written → WatchConfig; throws WatchError with Consul's message. */
function watchOf(raw: Record<string, unknown>, table: KeyTable): WatchConfig {
  // Keys as the table spells them; an unknown key is left for "Invalid parameters".
  const obj: Record<string, unknown> = {};
  const unknown: string[] = [];
  for (const [k, v] of Object.entries(raw)) {
    const name = canonical(table, k);
    if (name === undefined) unknown.push(k);
    else obj[name] = v;
  }
  const has = (k: string) => Object.hasOwn(obj, k);
  const type = has("type") ? stringOf(obj, "type", "type") : "";
  if (type === "") throw new WatchError("Watch type must be specified", "type");
  if (type.startsWith("connect_")) throw new WatchError(`Watch type ${type} is not allowed in agent config`, "type");
  if (!watchTypes.includes(type as WatchType)) throw new WatchError(`Unsupported watch type: ${type}`, "type");
  const handlerType = has("handler_type") ? stringOf(obj, "handler_type", "handler_type") : "script";
  if (handlerType !== "script" && handlerType !== "http") throw new WatchError(`Handler type '${handlerType}' not recognized`, "handler_type");
  if (handlerType === "http" && !has("http_handler_config")) throw new WatchError("Handler type 'http' requires 'http_handler_config' to be set", "handler_type");

  const w: WatchConfig = { type: type as WatchType, handlerType };
  if (has("datacenter")) w.datacenter = stringOf(obj, "datacenter", "datacenter");
  if (has("token")) w.token = stringOf(obj, "token", "token");
  const takes = new Set<string>(watchTypeParams[w.type]);
  // Consul's event watch ignores stale by not reading it: it is then an invalid parameter.
  if (w.type !== "event") takes.add("stale");
  const bad = [...unknown];
  for (const k of ["stale", "key", "prefix", "service", "tag", "passingonly", "state", "name"]) {
    if (!has(k)) continue;
    if (!takes.has(k)) {
      bad.push(k);
      continue;
    }
    if (k === "stale" || k === "passingonly") w[k] = boolOf(obj, k, k);
    else if (k === "tag") w.tag = stringsOf(obj, k, k);
    else (w as unknown as Record<string, string>)[k] = stringOf(obj, k, k);
  }
  if (handlerType === "http") w.httpHandlerConfig = httpConfig(obj.http_handler_config, table.http_handler_config!.keys ?? {});
  else if (has("http_handler_config")) bad.push("http_handler_config");
  if (bad.length > 0) throw new WatchError(`Invalid parameters: [${bad.join(" ")}]`, bad[0]);
  // Consul refuses an empty prefix in a config (funcs.go keyPrefixWatch); "/" is the whole store.
  if (w.type === "keyprefix" && !w.prefix) throw new WatchError("Must specify a single prefix to watch", "prefix");
  const q = watchQuery(w);
  if (typeof q === "string") throw new WatchError(q);

  const hasHandler = has("handler");
  const hasArgs = has("args");
  if (hasHandler) {
    if (typeof obj.handler !== "string") throw new WatchError("Watch handler must be a string", "handler");
    w.handler = obj.handler;
  }
  if (hasArgs) {
    const args = obj.args;
    if (!Array.isArray(args) || !args.every((a) => typeof a === "string")) throw new WatchError("Watch args must be a list of strings", "args");
    w.args = [...(args as string[])];
  }
  if ((hasHandler && hasArgs) || ((hasHandler || hasArgs) && handlerType === "http")) throw new WatchError("Only one watch handler allowed");
  if (!hasHandler && !hasArgs && handlerType !== "http") throw new WatchError("Must define a watch handler");
  if (hasArgs && w.args!.length === 0) throw new WatchError("Must define a watch handler", "args");
  return w;
}

/** `watches` (a list of objects, or HCL blocks) → WatchConfig[]; ConfigError naming the file, entry and line. */
export function decodeWatches(ctx: WatchDecodeCtx, table: KeyTable, value: unknown, at: { path: string; line: number | undefined }): WatchConfig[] {
  const list = isPlainObject(value) ? [value] : value;
  if (!Array.isArray(list)) {
    throw new ConfigError(`Invalid value for "${at.path}" in "${ctx.file}": expected a list of watches${at.line ? `, at line ${at.line}` : ""}`, { file: ctx.file, field: at.path, line: at.line });
  }
  return list.map((item, i) => {
    const path = `${at.path}[${i}]`;
    const itemLine = ctx.lineOf(list, i) ?? at.line;
    try {
      if (!isPlainObject(item)) throw new WatchError("expected an object");
      return watchOf(item, table);
    } catch (err) {
      if (!(err instanceof WatchError)) throw err;
      const keyLine = isPlainObject(item) && err.key ? lineOfKey(ctx, item, err.key) : undefined;
      const line = keyLine ?? itemLine;
      throw new ConfigError(`Invalid watch "${path}" in "${ctx.file}"${line ? ` at line ${line}` : ""}: ${err.message}`, { file: ctx.file, field: path, line });
    }
  });
}

function lineOfKey(ctx: WatchDecodeCtx, item: Record<string, unknown>, key: string): number | undefined {
  const written = Object.keys(item).find((k) => k.toLowerCase() === key.toLowerCase());
  return written === undefined ? undefined : ctx.lineOf(item, written);
}
