// `cairn watch`, as consul command/watch: a blocking-query loop over one
// view (key, keyprefix, services, nodes, service, checks, event). Without a
// handler the current value is printed as JSON and the command exits; with a
// handler, it runs once for the current value and again on every change,
// with the JSON on its stdin and CONSUL_INDEX set.
import { systemClock } from "../core/clock/mod.ts";
import { runWatchPlan, watchOnce, watchQuery as planQuery } from "../core/watch/mod.ts";
import type { WatchClient, WatchParams, WatchQuery, WatchType } from "../core/watch/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { onShutdownSignal, startChild } from "./_child.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, prettyJson } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "type", kind: "string", valueName: "string", usage: "Specifies the watch type. One of key, keyprefix, services, nodes, service, checks, or event." },
  { name: "key", kind: "string", valueName: "string", usage: "Specifies the key to watch. Only for 'key' type." },
  { name: "prefix", kind: "string", valueName: "string", usage: "Specifies the key prefix to watch. Only for 'keyprefix' type." },
  { name: "service", kind: "string", valueName: "string", usage: "Specifies the service to watch. Required for 'service' type, optional for 'checks' type." },
  { name: "tag", kind: "list", valueName: "string", usage: "Specifies the service tag(s) to filter on. Optional for 'service' type. May be specified multiple times." },
  { name: "passingonly", kind: "bool", usage: "Specifies if only hosts passing all checks are displayed. Optional for 'service' type, must be one of `[true|false]`. Defaults false." },
  { name: "state", kind: "string", valueName: "string", usage: "Specifies the states to watch. Optional for 'checks' type." },
  { name: "name", kind: "string", valueName: "string", usage: "Specifies an event name to watch. Only for 'event' type." },
  { name: "shell", kind: "bool", defaultText: "true", usage: "Use a shell to run the command (can set a custom shell via the SHELL environment variable). The default value is true." },
];

const HELP = `
Usage: cairn watch [options] [child...]

  Watches for changes in a given data view from Cairn. If a child process
  is specified, it will be invoked with the latest results on changes. Otherwise,
  the latest values are dumped to stdout and the watch terminates.

  Providing the watch type is required, and other parameters may be required
  or supported depending on the watch type.
`;

/** The watch parameters the flags give (Consul's command/watch builds the same map). */
function watchParams(p: ParsedFlags): WatchParams {
  return {
    type: str(p, "type") as WatchType,
    // -datacenter and -token reach the client through apiClientFromFlags; -stale is per query.
    stale: p.values.has("stale") && bool(p, "stale"),
    ...(p.values.has("key") ? { key: str(p, "key") } : {}),
    ...(p.values.has("prefix") ? { prefix: str(p, "prefix") } : {}),
    service: str(p, "service"),
    tag: list(p, "tag"),
    passingonly: bool(p, "passingonly"),
    state: str(p, "state"),
    name: str(p, "name"),
  };
}

/** Build the query for a watch from its flags, or an error message (Consul's wording). */
export function watchQuery(p: ParsedFlags): WatchQuery | string {
  if (str(p, "type") === "") return "Must specify watch type";
  return planQuery(watchParams(p));
}

/**
 * Run `onChange` for the current value and after every change until `signal`
 * aborts (exit 0); 1 when the very first query fails. Later errors are
 * retried with Consul's backoff.
 */
export async function watchLoop(
  client: WatchClient,
  q: WatchQuery,
  signal: AbortSignal,
  io: Pick<CliIo, "stderr">,
  onChange: (index: string, data: unknown) => Promise<void>,
): Promise<number> {
  const r = await runWatchPlan({
    client,
    query: q,
    clock: systemClock,
    signal,
    onChange,
    onError(err, { first, retryMs }) {
      if (first) {
        io.stderr(`Error querying Consul agent: ${apiErrorText(err)}\n`);
        return false;
      }
      io.stderr(`Watch error: ${apiErrorText(err)}; retrying in ${retryMs / 1000}s\n`);
      return true;
    },
  });
  return r === "error" ? 1 : 0;
}

export const watchCommand: Command = {
  name: "watch",
  synopsis: "Watch for changes in Cairn",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(watchCommand, args, flags, io);
    if (typeof p === "number") return p;
    const q = watchQuery(p);
    if (typeof q === "string") {
      io.stderr(`Error: ${q}\n`);
      return 1;
    }
    const client = apiClientFromFlags(p, io);
    const handler = p.positionals;
    const shell = p.values.has("shell") ? bool(p, "shell") : true;

    if (handler.length === 0) {
      try {
        const { data } = await watchOnce(client, q, "0");
        io.stdout(`${prettyJson(data)}\n`);
        return 0;
      } catch (err) {
        io.stderr(`Error querying Consul agent: ${apiErrorText(err)}\n`);
        return 1;
      }
    }

    const shutdown = onShutdownSignal();
    try {
      return await watchLoop(client, q, shutdown.signal, io, async (index, data) => {
        const body = new TextEncoder().encode(`${JSON.stringify(data)}\n`);
        const child = startChild(handler, io, { shell, env: { CONSUL_INDEX: index, CAIRN_INDEX: index }, stdin: body });
        const code = await child.exited;
        if (code !== 0) io.stderr(`Error executing handler: exit status ${code}\n`);
      });
    } finally {
      shutdown.cancel();
    }
  },
};
