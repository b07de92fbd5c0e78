// The file-reading shell around load.ts: -config-file and -config-dir, in
// the order they were given; a directory contributes its *.json, *.yaml and
// *.yml files in lexical order (an *.hcl file is an error).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ConfigError, errorMessage } from "../errors.ts";
import { buildConfig, formatForFile } from "./load.ts";
import type { ConfigFormat, ConfigSource } from "./load.ts";
import type { AgentConfig, ConfigLayer } from "./types.ts";

export interface ConfigPath {
  kind: "file" | "dir";
  path: string;
}

function readText(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (err) {
    throw new ConfigError(`Cannot read "${path}": ${errorMessage(err)}`, { file: path });
  }
}

/** Read every file named by the paths into sources, in application order. */
export function readConfigSources(paths: readonly ConfigPath[]): ConfigSource[] {
  const out: ConfigSource[] = [];
  for (const p of paths) {
    if (p.kind === "file") {
      let isDir = false;
      try {
        isDir = statSync(p.path).isDirectory();
      } catch (err) {
        throw new ConfigError(`Cannot read "${p.path}": ${errorMessage(err)}`, { file: p.path });
      }
      if (isDir) {
        out.push(...readConfigSources([{ kind: "dir", path: p.path }]));
        continue;
      }
      // -config-file with an unknown extension: Consul reads it as JSON.
      const format: ConfigFormat = formatForFile(p.path) ?? "json";
      out.push({ name: p.path, text: readText(p.path), format });
      continue;
    }
    let names: string[];
    try {
      names = readdirSync(p.path).sort();
    } catch (err) {
      throw new ConfigError(`Cannot read config directory "${p.path}": ${errorMessage(err)}`, { file: p.path });
    }
    for (const name of names) {
      const full = join(p.path, name);
      const format = formatForFile(full);
      if (format === undefined) continue;
      if (statSync(full).isDirectory()) continue;
      out.push({ name: full, text: readText(full), format });
    }
  }
  return out;
}

/** Files, then flags, over the defaults; node name falls back to the host name. */
export function loadConfig(options: { paths?: readonly ConfigPath[]; flags?: ConfigLayer; dev?: boolean }): AgentConfig {
  const sources = readConfigSources(options.paths ?? []);
  const config = buildConfig({ sources, flags: options.flags, dev: options.dev });
  if (config.nodeName === "") config.nodeName = hostname();
  return config;
}
