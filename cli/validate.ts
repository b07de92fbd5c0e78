// `cairn validate`, as consul command/validate: load config files and
// directories the way the agent would, and report every problem.
import { decodeConfigDefinitions } from "../core/local/local_agent.ts";
import { buildConfig, configFormats, validateConfig } from "../core/config/mod.ts";
import type { ConfigFormat, ConfigWarning } from "../core/config/mod.ts";
import { readConfigSources, type ConfigPath } from "../core/config/load_node.ts";
import { errorMessage } from "../core/errors.ts";
import { parseCommandFlags } from "./_command.ts";
import { bool, formatHelp, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { statSync } from "node:fs";

const flags: readonly FlagSpec[] = [
  {
    name: "config-format",
    kind: "string",
    valueName: "string",
    usage: "Config files are in this format irrespective of their extension. Must be 'hcl', 'json' or 'yaml'.",
  },
  { name: "quiet", kind: "bool", usage: "When given, a successful run will produce no output." },
];

const HELP = `
Usage: cairn validate [options] FILE_OR_DIRECTORY...

  Performs a thorough sanity test on configuration files. For each file
  or directory given, the validate command will attempt to parse the
  contents just as the "cairn agent" command would, and catch any errors.

  This is useful to do a test of the configuration only, without actually
  starting the agent. This performs all of the validation the agent would, so
  this should be given the complete set of configuration files that are going
  to be loaded by the agent. This command cannot operate on partial
  configuration fragments since those won't pass the full agent validation.

  Keys that are accepted but have no effect in cairn are listed as warnings
  (on stderr), one per key, as the agent logs them at startup.

  Returns 0 if the configuration is valid, or 1 if there are problems.

      $ cairn validate /etc/cairn.d/
`;

export const validateCommand: Command = {
  name: "validate",
  synopsis: "Validate config files/directories",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(validateCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length === 0) {
      io.stderr("Must specify at least one config file or directory\n");
      return 1;
    }
    let format: ConfigFormat | undefined;
    if (p.values.has("config-format")) {
      const f = str(p, "config-format");
      if (!configFormats.includes(f as ConfigFormat)) {
        io.stderr(`Invalid -config-format "${f}": must be 'hcl', 'json' or 'yaml'\n`);
        return 1;
      }
      format = f as ConfigFormat;
    }
    const problems: string[] = [];
    let warnings: ConfigWarning[] = [];
    try {
      const paths: ConfigPath[] = p.positionals.map((path) => {
        let dir = false;
        try {
          dir = statSync(path).isDirectory();
        } catch {
          // readConfigSources reports the missing file.
        }
        return { kind: dir ? "dir" : "file", path };
      });
      const skipped: ConfigWarning[] = [];
      const config = buildConfig({ sources: readConfigSources(paths, { format, warnings: skipped }), warnings: skipped });
      warnings = config.warnings;
      problems.push(...validateConfig(config).map((e) => e.message));
      problems.push(...decodeConfigDefinitions({ services: config.services, checks: config.checks }).errors.map((e) => e.message));
    } catch (err) {
      problems.push(errorMessage(err));
    }
    if (problems.length > 0) {
      io.stderr(`Config validation failed: ${problems.join("\n")}\n`);
      return 1;
    }
    if (!bool(p, "quiet")) {
      for (const w of warnings) io.stderr(`${w.message}\n`);
      io.stdout("Configuration is valid!\n");
    }
    return 0;
  },
};
