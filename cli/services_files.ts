// Service definitions from files for `services register|deregister`
// (consul command/services ServicesFromFiles): each file is a config file
// (JSON or YAML) whose `service`/`services` entries are taken as written.
import { decodeServiceDefinition } from "../core/service_defs/definition.ts";
import { formatForFile, parseConfigText } from "../core/config/mod.ts";
import { errorMessage } from "../core/errors.ts";
import type { CliIo } from "./_io.ts";

/** The raw service objects of every file, in order; throws with a message naming the file. */
export async function servicesFromFiles(files: readonly string[], io: CliIo): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (const file of files) {
    let bytes: Uint8Array;
    try {
      bytes = await io.readFile(file);
    } catch (err) {
      throw new Error(`Cannot read "${file}": ${errorMessage(err)}`);
    }
    const layer = parseConfigText(new TextDecoder().decode(bytes), { file, format: formatForFile(file) ?? "json" });
    for (const svc of layer.services ?? []) {
      try {
        decodeServiceDefinition(svc);
      } catch (err) {
        throw new Error(`Invalid service in "${file}": ${errorMessage(err)}`);
      }
      out.push(svc);
    }
  }
  return out;
}

/** A field of a definition whatever its spelling (`port`, `Port`, `PORT`). */
export function fieldOf(obj: Record<string, unknown>, name: string): unknown {
  const want = name.toLowerCase().replace(/_/g, "");
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase().replace(/_/g, "") === want) return v;
  return undefined;
}
