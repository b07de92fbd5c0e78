// The file-reading shell around load.ts: -config-file and -config-dir, in
// the order they were given; a directory contributes its *.hcl, *.json,
// *.yaml and *.yml files in lexical order (not its subdirectories) and skips
// other files with a warning, as Consul does (a -config-file too). With
// -config-format every file is read in that format, whatever its name.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { ConfigError, errorMessage } from "../errors.ts";
import { buildConfig, formatForFile } from "./load.ts";
import type { ConfigFormat, ConfigSource } from "./load.ts";
import type { AgentConfig, ConfigLayer, ConfigWarning } from "./types.ts";

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

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch (err) {
    throw new ConfigError(`Cannot read "${path}": ${errorMessage(err)}`, { file: path });
  }
}

/**
 * Read every file named by the paths into sources, in application order.
 * `format` forces one format for every file; `warnings` collects the files
 * a directory held that were skipped.
 */
export function readConfigSources(paths: readonly ConfigPath[], options: { format?: ConfigFormat; warnings?: ConfigWarning[] } = {}): ConfigSource[] {
  const out: ConfigSource[] = [];
  for (const p of paths) {
    if (p.kind === "file") {
      if (isDirectory(p.path)) {
        out.push(...readConfigSources([{ kind: "dir", path: p.path }], options));
        continue;
      }
      // Consul skips a -config-file it cannot tell the format of, with a warning, as in a directory.
      const format = options.format ?? formatForFile(p.path);
      if (format === undefined) {
        options.warnings?.push({
          sources: [{ file: p.path }],
          message: `Skipping "${p.path}": config files must end in .hcl, .json, .yaml or .yml (or set -config-format)`,
        });
        continue;
      }
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
      if (isDirectory(full)) continue;
      const format = options.format ?? formatForFile(full);
      if (format === undefined) {
        options.warnings?.push({
          sources: [{ file: full }],
          message: `Skipping "${full}": config files must end in .hcl, .json, .yaml or .yml (or set -config-format)`,
        });
        continue;
      }
      out.push({ name: full, text: readText(full), format });
    }
  }
  return out;
}

/** Files, then flags, then `-hcl` snippets over the defaults; node name falls back to the host name. */
export function loadConfig(options: {
  paths?: readonly ConfigPath[];
  flags?: ConfigLayer;
  dev?: boolean;
  hcl?: readonly string[];
  format?: ConfigFormat;
}): AgentConfig {
  const warnings: ConfigWarning[] = [];
  const sources = readConfigSources(options.paths ?? [], { format: options.format, warnings });
  const config = buildConfig({ sources, flags: options.flags, dev: options.dev, hcl: options.hcl, warnings });
  if (config.nodeName === "") config.nodeName = hostname();
  return config;
}
