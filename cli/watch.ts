// `cairn watch`, as consul command/watch: a blocking-query loop over one
// view (key, keyprefix, services, nodes, service, checks, event). Without a
// handler the current value is printed as JSON and the command exits; with a
// handler, it runs once for the current value and again on every change,
// with the JSON on its stdin and CONSUL_INDEX set.
import type { ApiClient } from "../core/api/client.ts";
import { escapeKey } from "../core/api/kv.ts";
import { parseCommandFlags, stripLeadingSlash } from "./_command.ts";
import { onShutdownSignal, startChild } from "./_child.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, prettyJson } from "./_output.ts";
import { linkedSignal } from "../core/api/signals.ts";

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

export type WatchType = "key" | "keyprefix" | "services" | "nodes" | "service" | "checks" | "event";
const watchTypes: readonly WatchType[] = ["key", "keyprefix", "services", "nodes", "service", "checks", "event"];

/** One blocking query of a watch: the path, its parameters, and how to turn the body into the handler's data. */
export interface WatchQuery {
  path: string;
  params: [string, string][];
  /** 404 is an empty result (key, keyprefix). */
  accept404: boolean;
  data(status: number, text: string): unknown;
}

/** Build the query for a watch from its flags, or an error message (Consul's wording). */
export function watchQuery(p: ParsedFlags): WatchQuery | string {
  const type = str(p, "type") as WatchType;
  if (type === ("" as WatchType)) return "Must specify watch type";
  if (!watchTypes.includes(type)) return `Unsupported watch type: ${type}`;
  const json = (text: string): unknown => (text.trim() === "" ? null : JSON.parse(text));
  const orEmpty = (v: unknown) => v ?? [];
  switch (type) {
    case "key": {
      const key = stripLeadingSlash(str(p, "key"));
      if (key === "") return "Must specify a single key to watch";
      return { path: `/v1/kv/${escapeKey(key)}`, params: [], accept404: true, data: (s, t) => (s === 404 ? null : ((json(t) as unknown[] | null)?.[0] ?? null)) };
    }
    case "keyprefix": {
      if (!p.values.has("prefix")) return "Must specify a single prefix to watch";
      const prefix = stripLeadingSlash(str(p, "prefix"));
      return { path: `/v1/kv/${escapeKey(prefix)}`, params: [["recurse", ""]], accept404: true, data: (s, t) => (s === 404 ? [] : orEmpty(json(t))) };
    }
    case "services":
      return { path: "/v1/catalog/services", params: [], accept404: false, data: (_s, t) => json(t) ?? {} };
    case "nodes":
      return { path: "/v1/catalog/nodes", params: [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
    case "service": {
      const service = str(p, "service");
      if (service === "") return "Must specify a single service to watch";
      const params: [string, string][] = list(p, "tag").map((t) => ["tag", t]);
      if (bool(p, "passingonly")) params.push(["passing", ""]);
      return { path: `/v1/health/service/${encodeURIComponent(service)}`, params, accept404: false, data: (_s, t) => orEmpty(json(t)) };
    }
    case "checks": {
      const service = str(p, "service");
      const state = str(p, "state");
      if (service !== "" && state !== "") return "Cannot specify service and state";
      if (service !== "") return { path: `/v1/health/checks/${encodeURIComponent(service)}`, params: [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
      return { path: `/v1/health/state/${encodeURIComponent(state || "any")}`, params: [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
    }
    case "event": {
      const name = str(p, "name");
      return { path: "/v1/event/list", params: name ? [["name", name]] : [], accept404: false, data: (_s, t) => orEmpty(json(t)) };
    }
  }
}

function pathWith(q: WatchQuery, extra: [string, string][]): string {
  const params = [...q.params, ...extra];
  if (params.length === 0) return q.path;
  const sp = new URLSearchParams(params);
  return `${q.path}?${sp.toString().replace(/=(&|$)/g, "$1")}`;
}

function indexValue(text: string): bigint {
  try {
    return /^\d+$/.test(text) ? BigInt(text) : 0n;
  } catch {
    return 0n;
  }
}

/**
 * One round of the watch: the data and its index, blocking above `index`.
 * Indexes stay text: the event list's are 64-bit hashes a number would round.
 */
export async function watchOnce(client: ApiClient, q: WatchQuery, index: string, signal?: AbortSignal): Promise<{ index: string; data: unknown }> {
  const blocking: [string, string][] = index !== "0" && index !== "" ? [["index", index], ["wait", "300s"]] : [];
  const r = await client.request({
    method: "GET",
    path: pathWith(q, blocking),
    query: { signal },
    accept: q.accept404 ? [404] : [],
  });
  return { index: r.meta.lastIndexText ?? String(r.meta.lastIndex), data: q.data(r.status, r.text) };
}

/**
 * Run `onChange` for the current value and after every change until `signal`
 * aborts (exit 0); 1 when the very first query fails. Later errors are
 * retried with backoff.
 */
export async function watchLoop(
  client: ApiClient,
  q: WatchQuery,
  signal: AbortSignal,
  io: Pick<CliIo, "stderr">,
  onChange: (index: string, data: unknown) => Promise<void>,
): Promise<number> {
  let index = "0";
  let first = true;
  let failures = 0;
  while (!signal.aborted) {
    let r: { index: string; data: unknown };
    const round = linkedSignal(signal);
    try {
      r = await watchOnce(client, q, index, round.signal);
      failures = 0;
    } catch (err) {
      if (signal.aborted) break;
      if (first) {
        io.stderr(`Error querying Consul agent: ${apiErrorText(err)}\n`);
        return 1;
      }
      failures++;
      io.stderr(`Watch error: ${apiErrorText(err)}; retrying\n`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(30_000, 1_000 * 2 ** Math.min(failures, 5))));
      continue;
    } finally {
      round.dispose();
    }
    // The index went backwards (a snapshot restore, a new leader): start over.
    // Event-list indexes are hashes, not ordered: only equality matters there.
    if (q.path !== "/v1/event/list" && indexValue(r.index) < indexValue(index)) {
      index = "0";
      continue;
    }
    if (!first && r.index === index) continue;
    first = false;
    index = r.index;
    await onChange(r.index, r.data);
  }
  return 0;
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
