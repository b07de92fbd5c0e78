// Pure loading: text of a JSON/YAML file → ConfigLayer; layers merged over
// the defaults → AgentConfig. Reading files is in load_node.ts.
//
// Merge rules (Consul's): a later layer overrides scalars of an earlier one,
// objects merge key by key, lists are appended (retry_join from two files
// gives both lists; `services` collect from every file).
import { parse as parseYaml, YAMLParseError } from "yaml";
import { findJsonSyntaxError } from "./json_error.ts";
import { ConfigError, errorMessage } from "../errors.ts";
import { decodeLayer } from "./_schema.ts";
import { defaultConfig, devLayer } from "./defaults.ts";
import type { AgentConfig, ConfigLayer } from "./types.ts";

export type ConfigFormat = "json" | "yaml";

/** The format for a file name, or a ConfigError for HCL, or undefined for other names. */
export function formatForFile(name: string): ConfigFormat | undefined {
  const lower = name.toLowerCase();
  if (lower.endsWith(".json")) return "json";
  if (lower.endsWith(".yaml") || lower.endsWith(".yml")) return "yaml";
  if (lower.endsWith(".hcl")) {
    throw new ConfigError(`Cannot load "${name}": HCL is not supported, use JSON or YAML`, { file: name });
  }
  return undefined;
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lines = before.split("\n");
  return { line: lines.length, column: lines[lines.length - 1]!.length + 1 };
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const problem = findJsonSyntaxError(text);
    const offset = problem?.offset ?? text.length;
    const { line, column } = lineCol(text, offset);
    const reason = problem?.reason ?? errorMessage(err);
    throw new ConfigError(`Cannot parse "${file}" at line ${line}, column ${column}: ${reason}`, { file, line });
  }
}

function parseYamlText(text: string, file: string): unknown {
  try {
    return parseYaml(text, { prettyErrors: false, uniqueKeys: true });
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

/** Parse and decode one file's text. Throws ConfigError naming the file (and line, key). */
export function parseConfigText(text: string, options: { file: string; format: ConfigFormat }): ConfigLayer {
  const parsed = options.format === "json" ? parseJson(text, options.file) : parseYamlText(text, options.file);
  return decodeLayer(parsed, options.file);
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

/**
 * defaults < dev layer (if dev) < files in order < flags. `leaveOnTerminate`
 * and `skipLeaveOnInterrupt` default by mode when nobody set them; the
 * domain gets its trailing dot. Throws ConfigError; does not validate.
 */
export function buildConfig(options: { sources?: readonly ConfigSource[]; flags?: ConfigLayer; dev?: boolean }): AgentConfig {
  const flags = options.flags ?? {};
  const dev = options.dev ?? flags.dev ?? false;
  const layers: ConfigLayer[] = [];
  if (dev) layers.push(devLayer());
  const files: string[] = [];
  for (const src of options.sources ?? []) {
    layers.push(parseConfigText(src.text, { file: src.name, format: src.format }));
    files.push(src.name);
  }
  layers.push(flags);
  const config = mergeLayers(defaultConfig(), layers);
  config.configFiles = files;
  const setsLeave = layers.some((l) => l.leaveOnTerminate !== undefined);
  if (!setsLeave) config.leaveOnTerminate = !config.server;
  const setsSkip = layers.some((l) => l.skipLeaveOnInterrupt !== undefined);
  if (!setsSkip) config.skipLeaveOnInterrupt = config.server;
  config.domain = withDot(config.domain);
  if (config.altDomain) config.altDomain = withDot(config.altDomain);
  return config;
}

function withDot(domain: string): string {
  return domain.endsWith(".") ? domain : `${domain}.`;
}
