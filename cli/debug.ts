// `cairn debug`, as consul command/debug: watch one agent for -duration and
// write what an operator needs to understand it into one bundle:
//
//   <output>/index.json              what was captured (Version, AgentVersion, Interval, Duration, Targets, Errors)
//   <output>/agent.json              /v1/agent/self, secrets hidden
//   <output>/members.json            /v1/agent/members (the LAN pool as this agent sees it)
//   <output>/host.json               /v1/agent/host (OS, memory, CPUs, the data dir's disk)
//   <output>/raft.json               /v1/operator/raft/configuration (when a leader answers)
//   <output>/<timestamp>/metrics.json   /v1/agent/metrics, once per -interval
//   <output>/consul.log              the agent's log at debug level for the whole run (/v1/agent/monitor)
//   <output>/profile.cpuprofile      a V8 CPU profile of the agent over the whole run (DevTools, speedscope)
//   <output>/heap.heapsnapshot       a V8 heap snapshot of the agent at the end (DevTools)
//
// then `<output>.tar.gz` (the directory removed) unless -archive=false.
// Profiles need enable_debug on the agent (-dev has it), as Consul's pprof.
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { ApiClient, RawRequest } from "../core/api/mod.ts";
import { formatDuration } from "../core/config/duration.ts";
import { errorMessage } from "../core/errors.ts";
import { onShutdownSignal } from "./_child.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, list, num, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";
import { tarGzDirectory } from "./_tar.ts";
import { redactJson, scrubChunks } from "./debug_redact.ts";

export const debugTargets = ["metrics", "logs", "pprof", "host", "agent", "members"] as const;
type Target = (typeof debugTargets)[number];

const defaultIntervalMs = 30_000;
const defaultDurationMs = 5 * 60_000;
/** cairn's floor for both (Consul's are 5s and 10s): a capture here costs the agent little. */
const minMs = 1_000;
/** Added to -duration so the last interval fits (Consul's debugDurationGrace). */
const graceMs = 2_000;
/** Bumped if the bundle's layout changes (Consul's debugProtocolVersion). */
export const debugBundleVersion = 1;

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  {
    name: "capture",
    kind: "list",
    valueName: "string",
    usage: `One or more types of information to capture. This can be used to capture a subset of information, and defaults to capturing everything available. Possible information for capture: ${debugTargets.join(", ")}. This can be repeated multiple times.`,
  },
  { name: "interval", kind: "duration", valueName: "duration", usage: "The interval in which to capture dynamic information such as telemetry. Defaults to 30s." },
  { name: "duration", kind: "duration", valueName: "duration", usage: "The total time to record information (the CPU profile and the log cover all of it). Defaults to 5m0s." },
  {
    name: "archive",
    kind: "bool",
    defaultText: "true",
    usage: "Boolean value for if the files should be archived and compressed. Setting this to false will skip the archive step and leave the directory of information on the current path.",
  },
  { name: "output", kind: "string", valueName: "string", usage: "The path to the compressed archive that will be created with the information after collection. Defaults to cairn-debug-<timestamp> in the current directory." },
];

const HELP = `
Usage: cairn debug [options]

  Monitors a Cairn agent for the specified period of time, recording
  information about the agent, cluster, and environment to an archive
  written to the specified path.

  To create a debug archive in the current directory for the default
  duration and interval, capturing all information available:

      $ cairn debug

  Flags can be used to customize the duration and interval of the
  operation. Duration is the total time to capture data for from the target
  agent and interval controls how often dynamic data such as metrics
  are scraped.

      $ cairn debug -interval=20s -duration=1m

  The capture flag can be specified multiple times to limit information
  retrieved.

      $ cairn debug -capture metrics -capture agent

  By default, the archive containing the debugging information is
  saved to the current directory as a .tar.gz file. The output path can be
  specified, as well as an option to disable archiving, leaving the
  directory intact.

      $ cairn debug -output=/foo/bar/my-debugging -archive=false

  The CPU profile (profile.cpuprofile) and the heap snapshot
  (heap.heapsnapshot) are V8's formats: Chrome DevTools opens both. They are
  taken only from an agent with enable_debug = true (-dev has it).

  Note: Information collected by this command has the potential to be
  highly sensitive. Tokens and gossip keys are redacted automatically
  (fields that hold secrets, the token this command used, and the agent's
  keys in its heap snapshot), but review the data within the archive
  before transmitting it.
`;

/** Go's "2006-01-02T15-04-05Z0700" in UTC: an RFC 3339 time without colons (tar reads colons as hosts). */
export function bundleTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replaceAll(":", "-") + "Z";
}

interface Capture {
  client: ApiClient;
  io: CliIo;
  dir: string;
  targets: Set<Target>;
  intervalMs: number;
  durationMs: number;
  signal: AbortSignal;
  errors: Record<string, string>;
  /** Values seen under secret field names, and the command's own token: scrubbed from every file at the end. */
  secrets: Set<string>;
}

function writeJson(c: Capture, name: string, value: unknown): void {
  writeFileSync(join(c.dir, name), `${JSON.stringify(redactJson(value, c.secrets), null, "\t")}\n`);
}

async function getJson(c: Capture, path: string, params?: Record<string, string | boolean>): Promise<unknown> {
  const r = await c.client.request({ method: "GET", path, params, query: { signal: c.signal } });
  return JSON.parse(r.text) as unknown;
}

function warn(c: Capture, what: string, err: unknown): void {
  const text = apiErrorText(err);
  c.errors[what] = text;
  c.io.stderr(`==> ${what} capture failed: ${text}\n`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

async function captureStatic(c: Capture): Promise<void> {
  const jobs: [Target, string, string, Record<string, string | boolean>?][] = [
    ["host", "host.json", "/v1/agent/host"],
    ["agent", "agent.json", "/v1/agent/self"],
    ["members", "members.json", "/v1/agent/members"],
  ];
  for (const [target, file, path, params] of jobs) {
    if (!c.targets.has(target)) continue;
    try {
      writeJson(c, file, await getJson(c, path, params));
    } catch (err) {
      warn(c, target, err);
    }
  }
}

/** Metrics now and every interval until the duration is over (or the command is interrupted). */
async function captureMetrics(c: Capture, endAt: number): Promise<void> {
  let n = 0;
  for (;;) {
    const at = Date.now();
    let sub = bundleTimestamp(at);
    if (existsSync(join(c.dir, sub))) sub = `${sub}-${n}`;
    mkdirSync(join(c.dir, sub), { recursive: true });
    try {
      writeJson(c, join(sub, "metrics.json"), await getJson(c, "/v1/agent/metrics"));
      c.io.stdout(`==> Capture successful ${new Date(at).toISOString()} (${n})\n`);
    } catch (err) {
      if (c.signal.aborted) return;
      warn(c, `metrics (${n})`, err);
    }
    n++;
    const next = at + c.intervalMs;
    if (next >= endAt || c.signal.aborted) return;
    await sleep(next - Date.now(), c.signal);
    if (c.signal.aborted) return;
  }
}

/** The agent's log at debug level for the whole run. */
async function captureLogs(c: Capture, endAt: number): Promise<void> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  c.signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(onAbort, Math.max(0, endAt - Date.now()));
  const pieces: string[] = [];
  const decoder = new TextDecoder();
  try {
    const body = await c.client.stream({ method: "GET", path: "/v1/agent/monitor", params: { loglevel: "debug" }, query: { signal: stop.signal } });
    for await (const piece of body) pieces.push(decoder.decode(piece, { stream: true }));
  } catch (err) {
    if (!stop.signal.aborted) warn(c, "logs", err);
  } finally {
    clearTimeout(timer);
    c.signal.removeEventListener("abort", onAbort);
    writeFileSync(join(c.dir, "consul.log"), pieces.join(""));
  }
}

/** A response body written to a file piece by piece (a heap snapshot may be longer than one string). */
async function streamToFile(c: Capture, path: string, req: RawRequest): Promise<void> {
  const body = await c.client.stream(req);
  const fd = openSync(path, "w");
  try {
    for await (const piece of body) writeSync(fd, piece);
  } finally {
    closeSync(fd);
  }
}

/** One CPU profile over the whole run (Consul's profile.prof), then one heap snapshot. */
async function captureProfiles(c: Capture, seconds: number): Promise<void> {
  try {
    const r = await c.client.request({ method: "GET", path: "/v1/agent/debug/profile", params: { seconds: String(seconds) }, query: { signal: c.signal } });
    writeFileSync(join(c.dir, "profile.cpuprofile"), r.text);
  } catch (err) {
    // Interrupted: the agent ends the profile when the request goes away, and nothing comes back.
    if (c.signal.aborted) c.errors["pprof (CPU profile)"] = "interrupted before the profile was complete";
    else warn(c, "pprof (CPU profile)", err);
  }
  // The heap snapshot is taken even after an interrupt: it takes a second, and it is what was asked for.
  try {
    await streamToFile(c, join(c.dir, "heap.heapsnapshot"), { method: "GET", path: "/v1/agent/debug/heap", query: { signal: AbortSignal.timeout(300_000) } });
  } catch (err) {
    warn(c, "pprof (heap snapshot)", err);
  }
}

/** A file's text in pieces of 4 MiB (UTF-8 split correctly between them). */
function* fileChunks(path: string): Generator<string> {
  const fd = openSync(path, "r");
  const buf = Buffer.alloc(4 << 20);
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      yield decoder.decode(buf.subarray(0, n), { stream: true });
    }
    const rest = decoder.decode();
    if (rest) yield rest;
  } finally {
    closeSync(fd);
  }
}

/** Every file of the bundle once more through the scrubber, with every secret learned while capturing. */
function scrubDir(dir: string, secrets: Set<string>): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      scrubDir(path, secrets);
      continue;
    }
    const tmp = `${path}.scrub`;
    const seen = { replaced: false };
    const fd = openSync(tmp, "w");
    try {
      for (const piece of scrubChunks(fileChunks(path), secrets, seen)) writeSync(fd, piece);
    } finally {
      closeSync(fd);
    }
    if (seen.replaced) renameSync(tmp, path);
    else rmSync(tmp);
  }
}

export const debugCommand: Command = {
  name: "debug",
  synopsis: "Records a debugging archive for operators",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(debugCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr("==> debug: Too many arguments provided, expected 0\n");
      return 1;
    }
    const intervalMs = num(p, "interval") ?? defaultIntervalMs;
    const durationMs = num(p, "duration") ?? defaultDurationMs;
    const fail = (text: string) => (io.stderr(`==> Capture validation failed: ${text}\n`), 1);
    if (durationMs < minMs) return fail(`duration must be at least ${formatDuration(minMs)}`);
    if (intervalMs < minMs) return fail(`interval must be at least ${formatDuration(minMs)}`);
    if (durationMs < intervalMs) return fail(`duration (${formatDuration(durationMs)}) must be longer than interval (${formatDuration(intervalMs)})`);
    const requested = list(p, "capture").map((t) => (t === "cluster" ? "members" : t));
    for (const t of requested) if (!(debugTargets as readonly string[]).includes(t)) return fail(`target not found: ${t}`);
    const targets = new Set<Target>(requested.length ? (requested as Target[]) : debugTargets);
    const archive = p.values.get("archive") !== false;
    const output = str(p, "output") || `cairn-debug-${bundleTimestamp(Date.now())}`;
    const archiveName = archive ? `${output}.tar.gz` : output;

    const client = apiClientFromFlags(p, io);
    let self: Record<string, Record<string, unknown>>;
    try {
      self = await client.agent.self();
    } catch (err) {
      return fail(`error querying target agent: ${apiErrorText(err)}. verify connectivity and agent address`);
    }
    const version = self.Config?.Version;
    if (typeof version !== "string") return fail("agent response did not contain version key");
    // Consul: pprof only with enable_debug, or with ACLs (then the token's operator:read decides).
    const enableDebug = self.DebugConfig?.EnableDebug === true;
    const aclsEnabled = self.DebugConfig?.ACLsEnabled === true;
    if (targets.has("pprof") && !enableDebug && !aclsEnabled) {
      targets.delete("pprof");
      io.stderr("==> [WARN] Unable to capture pprof. Set enable_debug to true on target agent to enable profiling.\n");
    }
    if (existsSync(output)) return fail(`output directory already exists: ${output}`);
    if (archive && existsSync(archiveName)) return fail(`output archive already exists: ${archiveName}`);
    try {
      mkdirSync(output, { recursive: true });
    } catch (err) {
      return fail(`could not create output directory: ${errorMessage(err)}`);
    }

    const targetList = debugTargets.filter((t) => targets.has(t));
    io.stdout("==> Starting debugger and capturing static information...\n");
    io.stdout(`     Agent Version: '${version}'\n`);
    io.stdout(`          Interval: '${formatDuration(intervalMs)}'\n`);
    io.stdout(`          Duration: '${formatDuration(durationMs)}'\n`);
    io.stdout(`            Output: '${archiveName}'\n`);
    io.stdout(`           Capture: '${targetList.join(", ")}'\n`);

    const shutdown = onShutdownSignal();
    const token = str(p, "token") || io.env.CAIRN_HTTP_TOKEN || io.env.CONSUL_HTTP_TOKEN || "";
    const c: Capture = { client, io, dir: output, targets, intervalMs, durationMs, signal: shutdown.signal, errors: {}, secrets: new Set(token ? [token] : []) };
    try {
      await captureStatic(c);
      const endAt = Date.now() + durationMs + graceMs;
      const jobs: Promise<void>[] = [];
      if (targets.has("metrics")) jobs.push(captureMetrics(c, endAt - graceMs));
      if (targets.has("logs")) jobs.push(captureLogs(c, endAt));
      if (targets.has("pprof")) jobs.push(captureProfiles(c, Math.ceil(durationMs / 1000)));
      if (jobs.length) io.stdout(`==> Beginning capture interval ${new Date().toISOString()} (0)\n`);
      await Promise.all(jobs);
      if (shutdown.signal.aborted) io.stderr("==> Capture interrupted: archiving what was captured\n");
      // Consul's captureRaft: the peer set as the leader sees it (a client or a leaderless cluster cannot say).
      try {
        writeJson(c, "raft.json", await getJson({ ...c, signal: AbortSignal.timeout(10_000) }, "/v1/operator/raft/configuration"));
      } catch (err) {
        warn(c, "raft", err);
      }
      writeJson(c, "index.json", {
        Version: debugBundleVersion,
        AgentVersion: version,
        Interval: formatDuration(intervalMs),
        Duration: formatDuration(durationMs + graceMs),
        Targets: targetList,
        ...(Object.keys(c.errors).length ? { Errors: c.errors } : {}),
      });
      scrubDir(output, c.secrets);
    } finally {
      shutdown.cancel();
    }

    if (archive) {
      try {
        const tmp = `${archiveName}.tmp`;
        writeFileSync(tmp, tarGzDirectory(output));
        renameSync(tmp, archiveName);
        rmSync(output, { recursive: true, force: true });
      } catch (err) {
        io.stderr(`==> Archive creation failed: ${errorMessage(err)}\n`);
        return 1;
      }
    }
    io.stdout(`==> Saved debug archive: ${archiveName}\n`);
    return 0;
  },
};
