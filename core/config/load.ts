// Pure loading: text of an HCL/JSON/YAML file → ConfigLayer; layers merged
// over the defaults → AgentConfig. Reading files is in load_node.ts.
//
// Merge rules (Consul's): a later layer overrides scalars of an earlier one,
// objects merge key by key, lists are appended (retry_join from two files
// gives both lists; `services` collect from every file).
import { isMap, isScalar, isSeq, LineCounter, parseDocument, YAMLParseError } from "yaml";
import type { Node as YamlNode } from "yaml";
import { ConfigError, errorMessage } from "../errors.ts";
import { HclSyntaxError, parseHcl, parseJsonDocument, type ParsedDocument, type SourcePosition } from "../hcl/mod.ts";
import { decodeLayer, type KeyUse } from "./_schema.ts";
import { defaultConfig, devLayer } from "./defaults.ts";
import type { AgentConfig, ConfigLayer, ConfigWarning } from "./types.ts";

export type ConfigFormat = "json" | "hcl" | "yaml";

export const configFormats: readonly ConfigFormat[] = ["hcl", "json", "yaml"];

/** The format for a file name, or undefined for names that are not config files. */
export function formatForFile(name: string): ConfigFormat | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith(".json")) return "json";
  if (lower.endsWith(".hcl")) return "hcl";
  if (lower.endsWith(".yaml") || lower.endsWith(".yml")) return "yaml";
  return undefined;
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split("\n");
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

function syntaxError(file: string, err: HclSyntaxError): ConfigError {
  return new ConfigError(`Cannot parse "${file}" at line ${err.line}, column ${err.column}: ${err.reason}`, { file, line: err.line });
}

function parseJson(text: string, file: string): ParsedDocument {
  try {
    return parseJsonDocument(text, { file });
  } catch (err) {
    if (err instanceof HclSyntaxError) throw syntaxError(file, err);
    throw err;
  }
}

function parseHclText(text: string, file: string): ParsedDocument {
  try {
    return parseHcl(text, { file });
  } catch (err) {
    if (err instanceof HclSyntaxError) throw syntaxError(file, err);
    throw err;
  }
}

/** YAML through the yaml package, with the lines of keys and list items taken from its node tree. */
function parseYamlText(text: string, file: string): ParsedDocument {
  try {
    const lineCounter = new LineCounter();
    const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
    if (doc.errors.length > 0) throw doc.errors[0];
    const value: unknown = doc.toJS();
    const positions = new WeakMap<object, Map<string | number, SourcePosition>>();
    const record = (container: object, key: string | number, node: unknown) => {
      const range = (node as YamlNode | undefined)?.range;
      if (!range) return;
      const { line, col } = lineCounter.linePos(range[0]);
      let m = positions.get(container);
      if (!m) positions.set(container, (m = new Map()));
      m.set(key, { line, column: col });
    };
    const walk = (node: unknown, js: unknown): void => {
      if (isMap(node) && typeof js === "object" && js !== null && !Array.isArray(js)) {
        for (const pair of node.items) {
          if (!isScalar(pair.key)) continue;
          const key = String(pair.key.value);
          record(js, key, pair.key);
          walk(pair.value, (js as Record<string, unknown>)[key]);
        }
      } else if (isSeq(node) && Array.isArray(js)) {
        node.items.forEach((item, i) => {
          record(js, i, item);
          walk(item, js[i]);
        });
      }
    };
    walk(doc.contents, value);
    return { value, position: (container, key) => positions.get(container)?.get(key) };
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const pos = err.linePos?.[0] ?? lineCol(text, err.pos[0]);
      const line = pos.line;
      const column = "col" in pos ? pos.col : pos.column;
      const reason = err.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
      throw new ConfigError(`Cannot parse "${file}" at line ${line}, column ${column}: ${reason}`, { file, line });
    }
    throw new ConfigError(`Cannot parse "${file}": ${errorMessage(err)}`, { file });
  }
}

function parseText(text: string, options: { file: string; format: ConfigFormat }): ParsedDocument {
  switch (options.format) {
    case "json":
      return parseJson(text, options.file);
    case "hcl":
      return parseHclText(text, options.file);
    case "yaml":
      return parseYamlText(text, options.file);
  }
}

/**
 * Parse and decode one file's text, and list the planned and ignored keys
 * it sets. Throws ConfigError naming the file (and line, key).
 */
export function parseConfigSource(text: string, options: { file: string; format: ConfigFormat }): { layer: ConfigLayer; uses: KeyUse[] } {
  const doc = parseText(text, options);
  return decodeLayer(doc.value, { file: options.file, position: doc.position });
}

/** Parse and decode one file's text. Throws ConfigError naming the file (and line, key). */
export function parseConfigText(text: string, options: { file: string; format: ConfigFormat }): ConfigLayer {
  return parseConfigSource(text, options).layer;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function mergeInto(target: Record<string, unknown>, layer: Record<string, unknown>): void {
  for (const [k, v] of Object.entries(layer)) {
    if (v === undefined) continue;
    const prev = target[k];
    if (Array.isArray(v)) target[k] = Array.isArray(prev) ? [...prev, ...v] : [...v];
    else if (isPlainObject(v)) {
      const next = isPlainObject(prev) ? { ...prev } : {};
      mergeInto(next, v);
      target[k] = next;
    } else target[k] = v;
  }
}

/** Apply layers, in order, over a base config. Does not modify its inputs. */
export function mergeLayers(base: AgentConfig, layers: readonly ConfigLayer[]): AgentConfig {
  const out = structuredClone(base) as unknown as Record<string, unknown>;
  for (const layer of layers) mergeInto(out, layer as Record<string, unknown>);
  return out as unknown as AgentConfig;
}

export interface ConfigSource {
  /** File name, for messages and `configFiles`. */
  name: string;
  text: string;
  format: ConfigFormat;
}

/** The name `-hcl` snippet `i` (0-based) goes by in messages. */
export function hclSnippetName(i: number): string {
  return `-hcl #${i + 1}`;
}

/** One warning per planned or ignored key, naming every file (and line) that set it. */
export function keyWarnings(found: readonly { file: string; uses: readonly KeyUse[] }[]): ConfigWarning[] {
  const byKey = new Map<string, { use: KeyUse; sources: { file: string; line?: number }[] }>();
  for (const { file, uses } of found) {
    for (const use of uses) {
      const entry = byKey.get(use.key);
      const source = use.line ? { file, line: use.line } : { file };
      if (!entry) byKey.set(use.key, { use, sources: [source] });
      else if (!entry.sources.some((s) => s.file === file)) entry.sources.push(source);
    }
  }
  return [...byKey.values()].map(({ use, sources }) => {
    const where = sources.map((s) => `"${s.file}"${s.line ? ` line ${s.line}` : ""}`).join(", ");
    if (use.status === "implemented") {
      return {
        key: use.key,
        status: use.status,
        sources,
        message: `The '${use.key}' field (from ${where}) is deprecated. Use the '${use.replacedBy}' field instead.`,
      };
    }
    const effect = use.status === "planned" ? "has no effect in cairn yet" : "has no effect in cairn";
    const deprecated = use.replacedBy ? ` (Consul has replaced it with "${use.replacedBy}")` : "";
    return {
      key: use.key,
      status: use.status,
      sources,
      message: `Config key "${use.key}" from ${where} ${effect}: ${use.note}${deprecated}`,
    };
  });
}

/**
 * defaults < dev layer (if dev) < files in order < flags < `-hcl` snippets
 * (Consul applies them last). `startJoin` and `startJoinWan` move into
 * `retryJoin` and `retryJoinWan` (Consul 1.15+); `leaveOnTerminate` and
 * `skipLeaveOnInterrupt` default by mode when nobody set them; the domain gets its trailing dot;
 * `warnings` lists the planned and ignored keys, one entry per key, and any
 * `warnings` passed in. Throws ConfigError; does not validate.
 */
export function buildConfig(options: {
  sources?: readonly ConfigSource[];
  flags?: ConfigLayer;
  dev?: boolean;
  hcl?: readonly string[];
  warnings?: readonly ConfigWarning[];
}): AgentConfig {
  const flags = options.flags ?? {};
  const dev = options.dev ?? flags.dev ?? false;
  const layers: ConfigLayer[] = [];
  if (dev) layers.push(devLayer());
  const files: string[] = [];
  const found: { file: string; uses: KeyUse[] }[] = [];
  for (const src of options.sources ?? []) {
    const { layer, uses } = parseConfigSource(src.text, { file: src.name, format: src.format });
    layers.push(layer);
    found.push({ file: src.name, uses });
    files.push(src.name);
  }
  layers.push(flags);
  (options.hcl ?? []).forEach((text, i) => {
    const { layer, uses } = parseConfigSource(text, { file: hclSnippetName(i), format: "hcl" });
    layers.push(layer);
    found.push({ file: hclSnippetName(i), uses });
  });
  const config = mergeLayers(defaultConfig(), layers);
  config.configFiles = files;
  config.warnings = [...(options.warnings ?? []), ...keyWarnings(found)];
  // Consul 1.15+ (hashicorp/consul#15598): -join/start_join are aliases of -retry-join/retry_join, merged after them, with a warning.
  for (const [from, to, key, flag] of [["startJoin", "retryJoin", "start_join", "join"], ["startJoinWan", "retryJoinWan", "start_join_wan", "join-wan"]] as const) {
    if (config[from].length === 0) continue;
    config[to] = [...config[to], ...config[from]];
    config[from] = [];
    const byFlag = (flags[from]?.length ?? 0) > 0;
    const byFile = layers.some((l) => l !== flags && (l[from]?.length ?? 0) > 0);
    if (byFlag) config.warnings.push({ sources: [], message: `The -${flag} flag is deprecated. Use the -retry-${flag} flag instead` });
    if (byFile) config.warnings.push({ key, sources: [], message: `The '${key}' configuration field is deprecated. Use the '${key.replace("start_", "retry_")}' field instead` });
  }
  foldDeprecatedAcl(config, layers);
  // request_limits is a server's limit on what it handles (Consul ignores it on clients): say so rather than ignore it quietly.
  if (!config.server && !config.dev && config.limits.requestLimits.mode !== "disabled" && config.limits.requestLimits.mode !== "") {
    config.warnings.push({ key: "limits.request_limits", sources: [], message: "limits.request_limits applies to servers only: this client agent limits what it sends with limits.rpc_rate" });
  }
  const setsLeave = layers.some((l) => l.leaveOnTerminate !== undefined);
  if (!setsLeave) config.leaveOnTerminate = !config.server;
  const setsSkip = layers.some((l) => l.skipLeaveOnInterrupt !== undefined);
  if (!setsSkip) config.skipLeaveOnInterrupt = config.server;
  config.domain = withDot(config.domain);
  if (config.altDomain) config.altDomain = withDot(config.altDomain);
  return config;
}

/**
 * Consul's deprecated ACL keys (agent/config/deprecated.go): `acl_datacenter`
 * is primary_datacenter when that is not set and turns ACLs on;
 * `acl_replication_token` is acl.tokens.replication when that is not set and
 * turns token replication on; `enable_acl_replication` is
 * acl.enable_token_replication when that is not set.
 */
function foldDeprecatedAcl(config: AgentConfig, layers: readonly ConfigLayer[]): void {
  if (config.aclDatacenter !== "") {
    if (!layers.some((l) => l.primaryDatacenter !== undefined)) config.primaryDatacenter = config.aclDatacenter;
    config.acl.enabled = true;
  }
  const setsTokenReplication = layers.some((l) => l.acl?.enableTokenReplication !== undefined);
  if (layers.some((l) => l.enableAclReplication !== undefined) && !setsTokenReplication) config.acl.enableTokenReplication = config.enableAclReplication;
  if (config.aclReplicationToken !== "") {
    if (!layers.some((l) => l.acl?.tokens?.replication !== undefined)) config.acl.tokens.replication = config.aclReplicationToken;
    config.acl.enableTokenReplication = true;
  }
}

function withDot(domain: string): string {
  return domain.endsWith(".") ? domain : `${domain}.`;
}
