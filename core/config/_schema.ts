// Decoding one parsed file against the key table (keys.ts): implemented
// keys land in a ConfigLayer (Consul's snake_case → camelCase fields),
// planned and ignored keys are recorded for the startup warnings, and any
// other key is a ConfigError naming the file, the key path and its line.
//
// Key names match as Consul's decoder matches them: exactly, else ignoring
// case (mapstructure); inside service and check definitions also ignoring
// `_` (Consul's lib.TranslateKeys: `enable_tag_override` = `EnableTagOverride`).
// HCL's shape is taken as it comes from core/hcl: a block repeated where one
// is expected is decoded block by block, a single block where a list is
// expected is a list of one.
import { ConfigError } from "../errors.ts";
import type { SourcePosition } from "../hcl/mod.ts";
import { parseLogLevel } from "../log/mod.ts";
import { parseDuration } from "./duration.ts";
import { decodeWatches } from "./_watches.ts";
import { AGENT_KEYS, type DecodeKind, type KeySpec, type KeyStatus, type KeyTable } from "./keys.ts";
import type { ConfigLayer } from "./types.ts";

/** A planned or ignored key met in a file. */
export interface KeyUse {
  /** Path in the key table: `acl`, `limits.rpc_rate`, `service.connect`. */
  key: string;
  /** "implemented" only for a key Consul renamed (the warning says so). */
  status: KeyStatus;
  note: string;
  replacedBy?: string;
  line?: number;
}

export interface DecodeOptions {
  file: string;
  /** Where a key or list element was written (from core/hcl's ParsedDocument). */
  position?: (container: object, key: string | number) => SourcePosition | undefined;
}

interface Ctx {
  file: string;
  position?: DecodeOptions["position"];
  uses: KeyUse[];
}

function camel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** Consul's lib.TranslateKeys view of a definition key. */
function norm(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, "");
}

function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return `a string ("${v}")`;
  return `${typeof v === "number" ? "a number" : typeof v} (${String(v)})`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function lineOf(ctx: Ctx, container: object, key: string | number): number | undefined {
  return ctx.position?.(container, key)?.line;
}

function fail(ctx: Ctx, path: string, expected: string, got: unknown, line?: number): never {
  const where = line ? `, at line ${line}` : "";
  throw new ConfigError(`Invalid value for "${path}" in "${ctx.file}": expected ${expected}, got ${typeName(got)}${where}`, {
    file: ctx.file,
    field: path,
    line,
  });
}

function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(prev[j]! + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

function unknownKey(ctx: Ctx, table: KeyTable, key: string, path: string, line: number | undefined): never {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of Object.keys(table)) {
    const d = editDistance(norm(key), norm(name));
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  const hint = best !== undefined && bestDistance <= Math.max(2, Math.floor(norm(key).length / 3)) ? `: did you mean "${best}"?` : "";
  throw new ConfigError(`Unknown configuration key "${path}" in "${ctx.file}"${line ? ` at line ${line}` : ""}${hint}`, {
    file: ctx.file,
    field: path,
    line,
  });
}

/** The table entry for a key as written: exact, then Consul's looser matches. */
function lookup(table: KeyTable, key: string, loose: boolean): [string, KeySpec] | undefined {
  if (Object.hasOwn(table, key)) return [key, table[key]!];
  const want = loose ? norm(key) : key.toLowerCase();
  for (const [name, spec] of Object.entries(table)) {
    for (const n of [name, ...(spec.aliases ?? [])]) {
      if ((loose ? norm(n) : n.toLowerCase()) === want) return [name, spec];
    }
  }
  return undefined;
}

/** True when the value only asks for what cairn does anyway (`connect { enabled = false }`). */
function isInert(spec: KeySpec, value: unknown, loose: boolean): boolean {
  if (spec.keys) {
    const keys = spec.keys;
    const inert = (v: unknown): boolean =>
      isPlainObject(v) &&
      Object.entries(v).every(([k, x]) => {
        const found = lookup(keys, k, loose);
        return found !== undefined && isInert(found[1], x, loose);
      });
    return Array.isArray(value) ? value.every(inert) : inert(value);
  }
  return spec.inert !== undefined && (typeof value === "string" || typeof value === "number" || typeof value === "boolean") && spec.inert.includes(value);
}

function note(ctx: Ctx, key: string, status: KeyStatus, spec: KeySpec, value: unknown, line: number | undefined, loose: boolean): void {
  // An implemented key Consul has renamed still gets one warning saying so, as Consul's own.
  if (status === "implemented" ? !spec.replacedBy : isInert(spec, value, loose)) return;
  ctx.uses.push({ key, status, note: spec.note ?? "", ...(spec.replacedBy ? { replacedBy: spec.replacedBy } : {}), line });
}

function decodeLeaf(ctx: Ctx, path: string, kind: DecodeKind, v: unknown, line: number | undefined): unknown {
  switch (kind) {
    case "blocks": {
      // HCL gives `sink "a" {…}` as { a: {…} } (a repeated block as a list of those).
      const out: Record<string, unknown> = {};
      for (const item of Array.isArray(v) ? v : [v]) {
        if (!isPlainObject(item)) fail(ctx, path, "named blocks", v, line);
        for (const [name, body] of Object.entries(item)) {
          const b = Array.isArray(body) && body.length === 1 ? body[0] : body;
          if (!isPlainObject(b)) fail(ctx, `${path}.${name}`, "a block", body, line);
          out[name] = b;
        }
      }
      return out;
    }
    case "string":
      if (typeof v !== "string") fail(ctx, path, "a string", v, line);
      return v;
    case "bool":
      if (typeof v !== "boolean") fail(ctx, path, "true or false", v, line);
      return v;
    case "uint":
      if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) fail(ctx, path, "a whole number ≥ 0", v, line);
      return v;
    case "int":
      if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(ctx, path, "a whole number", v, line);
      return v;
    case "number":
      if (typeof v !== "number" || !Number.isFinite(v)) fail(ctx, path, "a number", v, line);
      return v;
    case "port":
      if (typeof v !== "number" || !Number.isSafeInteger(v)) fail(ctx, path, "a port number", v, line);
      return v;
    case "duration": {
      if (typeof v !== "string") fail(ctx, path, 'a duration such as "10s" or "1m30s"', v, line);
      const ms = parseDuration(v);
      if (ms === undefined) fail(ctx, path, 'a duration such as "10s" or "1m30s"', v, line);
      return ms;
    }
    case "logLevel": {
      if (typeof v !== "string") fail(ctx, path, "a log level (trace, debug, info, warn, err)", v, line);
      const level = parseLogLevel(v);
      if (!level) fail(ctx, path, "a log level (trace, debug, info, warn, err)", v, line);
      return level;
    }
    case "strings": {
      const list = typeof v === "string" ? [v] : v;
      if (!Array.isArray(list)) fail(ctx, path, "a list of strings", v, line);
      list.forEach((item, i) => {
        if (typeof item !== "string") fail(ctx, `${path}[${i}]`, "a string", item, lineOf(ctx, list, i) ?? line);
      });
      return [...(list as string[])];
    }
    case "stringMap": {
      if (!isPlainObject(v)) fail(ctx, path, "an object of strings", v, line);
      const out: Record<string, string> = {};
      for (const [k, item] of Object.entries(v)) {
        if (typeof item !== "string") fail(ctx, `${path}.${k}`, "a string", item, lineOf(ctx, v, k) ?? line);
        out[k] = item;
      }
      return out;
    }
    case "durationMap": {
      if (!isPlainObject(v)) fail(ctx, path, "an object of durations", v, line);
      const out: Record<string, number> = {};
      for (const [k, item] of Object.entries(v)) out[k] = decodeLeaf(ctx, `${path}.${k}`, "duration", item, lineOf(ctx, v, k) ?? line) as number;
      return out;
    }
    case "definition":
    case "definitions":
    case "watches":
      throw new TypeError(`decodeLeaf: ${kind} is decoded by decodeDefinitions or decodeWatches`);
  }
}

function setPath(root: Record<string, unknown>, dotted: string, value: unknown, append: boolean): void {
  const parts = dotted.split(".");
  let obj = root;
  for (const p of parts.slice(0, -1)) {
    if (!isPlainObject(obj[p])) obj[p] = {};
    obj = obj[p] as Record<string, unknown>;
  }
  const last = parts[parts.length - 1]!;
  const prev = obj[last];
  obj[last] = append && Array.isArray(prev) && Array.isArray(value) ? [...prev, ...value] : value;
}

function join(target: string, to: string): string {
  if (to.startsWith("$")) return to.slice(1);
  return target ? `${target}.${to}` : to;
}

/** A block's value: one object, or a list of them (a block repeated in HCL). */
function blocks(ctx: Ctx, path: string, value: unknown, line: number | undefined): Record<string, unknown>[] {
  if (isPlainObject(value)) return [value];
  if (Array.isArray(value) && value.every(isPlainObject)) return value;
  return fail(ctx, path, "an object", value, line);
}

interface Walk {
  /** Path as written, for messages: `ports.htp`, `services[1].name`. */
  path: string;
  /** Path in the key table. */
  key: string;
  /** Where implemented values go; undefined inside planned or ignored blocks. */
  target: string | undefined;
  status: KeyStatus;
}

function decodeObject(ctx: Ctx, table: KeyTable, obj: Record<string, unknown>, w: Walk, out: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(obj)) {
    const line = lineOf(ctx, obj, key);
    const path = w.path ? `${w.path}.${key}` : key;
    const found = lookup(table, key, false);
    if (!found) unknownKey(ctx, table, key, path, line);
    const [name, spec] = found;
    const tableKey = w.key ? `${w.key}.${name}` : name;
    const status = spec.status ?? w.status;
    if (status !== w.status || (status === "implemented" && spec.replacedBy)) note(ctx, tableKey, status, spec, value, line, false);
    if (spec.decode === "watches") {
      const watches = decodeWatches({ file: ctx.file, lineOf: (c, k) => lineOf(ctx, c, k) }, spec.keys ?? {}, value, { path, line });
      if (w.target !== undefined) setPath(out, join(w.target, spec.to ?? camel(name)), watches, true);
      continue;
    }
    if (spec.decode === "definition" || spec.decode === "definitions") {
      if (w.target !== undefined) decodeDefinitions(ctx, spec, value, { path, key: tableKey, line, to: join(w.target, spec.to ?? camel(name)) }, out);
      continue;
    }
    if (spec.decode) {
      if (w.target === undefined) continue;
      const decoded = decodeLeaf(ctx, path, spec.decode, value, line);
      const to = spec.to ?? camel(name) + (spec.decode === "duration" ? "Ms" : "");
      setPath(out, join(w.target, to), decoded, false);
      continue;
    }
    if (spec.keys) {
      const target = status === "implemented" && w.target !== undefined ? join(w.target, spec.to ?? camel(name)) : undefined;
      for (const block of blocks(ctx, path, value, line)) decodeObject(ctx, spec.keys, block, { path, key: tableKey, target, status }, out);
    }
    // Any other key takes any value: it has no effect (or, like disable_update_check, asks for what cairn always does).
  }
}

/**
 * `service`, `services`, `check`, `checks`: the definitions are kept as
 * written (core/local decodes them), after checking their keys and
 * making a single `checks` block a list.
 */
function decodeDefinitions(
  ctx: Ctx,
  spec: KeySpec,
  value: unknown,
  at: { path: string; key: string; line: number | undefined; to: string },
  out: Record<string, unknown>,
): void {
  let list: unknown[];
  if (isPlainObject(value)) list = [value];
  else if (Array.isArray(value)) list = value;
  else return fail(ctx, at.path, spec.decode === "definition" ? "an object" : "a list of objects", value, at.line);
  const defs = list.map((item, i) => {
    const path = Array.isArray(value) ? `${at.path}[${i}]` : at.path;
    if (!isPlainObject(item)) fail(ctx, path, "an object", item, Array.isArray(value) ? (lineOf(ctx, value, i) ?? at.line) : at.line);
    return normalizeDefinition(ctx, spec.keys ?? {}, item, path, at.key);
  });
  setPath(out, at.to, defs, true);
}

function normalizeDefinition(ctx: Ctx, table: KeyTable, obj: Record<string, unknown>, path: string, key: string): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const [k, value] of Object.entries(obj)) {
    const line = lineOf(ctx, obj, k);
    const found = lookup(table, k, true);
    if (!found) unknownKey(ctx, table, k, `${path}.${k}`, line);
    const [name, spec] = found;
    const tableKey = `${key}.${name}`;
    note(ctx, tableKey, spec.status ?? "implemented", spec, value, line, true);
    let v = value;
    if (spec.keys) {
      const keys = spec.keys;
      if (spec.list && isPlainObject(v)) v = [v];
      if (isPlainObject(v)) v = normalizeDefinition(ctx, keys, v, `${path}.${k}`, tableKey);
      else if (Array.isArray(v)) {
        v = v.map((el, i) => (isPlainObject(el) ? normalizeDefinition(ctx, keys, el, `${path}.${k}[${i}]`, tableKey) : el));
      }
    }
    if (k === "__proto__") Object.defineProperty(copy, k, { value: v, enumerable: true, writable: true, configurable: true });
    else copy[k] = v;
  }
  return copy;
}

/**
 * Decode one parsed file into a layer, and list the planned and ignored
 * keys it uses. Throws ConfigError on unknown keys or wrong types.
 */
export function decodeLayer(parsed: unknown, options: DecodeOptions): { layer: ConfigLayer; uses: KeyUse[] } {
  const ctx: Ctx = { file: options.file, position: options.position, uses: [] };
  if (parsed === null || parsed === undefined) return { layer: {}, uses: [] };
  if (!isPlainObject(parsed)) {
    throw new ConfigError(`Invalid configuration in "${options.file}": expected an object at the top level, got ${typeName(parsed)}`, { file: options.file });
  }
  const out: Record<string, unknown> = {};
  decodeObject(ctx, AGENT_KEYS, parsed, { path: "", key: "", target: "", status: "implemented" }, out);
  return { layer: out as ConfigLayer, uses: ctx.uses };
}
