// `cairn doctor`: look at a live cluster through one agent and say what is
// wrong, with the evidence and the fix (cli/doctor_analysis.ts decides; this
// file gathers). What it asks:
//
//   the agent named by -http-addr: self (its stats' decrypt-failure counters),
//     members (LAN, and WAN on a server), status/leader, operator raft
//     configuration (?stale without a leader), autopilot health, the
//     keyring (every agent answers through a gossip query), and
//     /v1/health/state/any?stale sampled every 500 ms over -sample;
//   every server in its LAN view that is alive or failed, directly over HTTP at the
//     member's address and its http_port tag (-http-addr's port without one):
//     its own members and leader (views compared), its host facts (clock
//     offset from CollectionTime ± half the round trip; the data dir's disk),
//     and its decrypt-failure counters at both ends of the window.
//
// Limits: a server whose HTTP API listens where the doctor cannot reach it
// (client_addr 127.0.0.1 on another host) is reported as not asked and its
// view, clock and disk are not compared; clients' own views are not asked
// (only the entry agent's, when it is a client).
// Exit: 0 nothing to act on, 1 problems found, 2 could not ask the agent.
import type { ApiClient } from "../core/api/mod.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, num, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText, parseFormat } from "./_output.ts";
import {
  analyze,
  defaultThresholds,
  exitCodeFor,
  formatFindings,
  type AgentView,
  type AutopilotServerFact,
  type CheckFact,
  type CheckHistory,
  type DoctorFacts,
  type KeyringPoolFact,
  type MemberFact,
  type RaftPeerFact,
} from "./doctor_analysis.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "format", kind: "string", valueName: "string", defaultText: "pretty", usage: 'Output format: "pretty" (one block per finding) or "json".' },
  {
    name: "sample",
    kind: "duration",
    valueName: "duration",
    defaultText: "3s",
    usage: "How long to watch the cluster: health checks are sampled every 500ms over it (a check that changes status twice or more is flapping) and gossip decrypt failures are counted over it. 0 takes one sample.",
  },
  { name: "disk-warn-percent", kind: "uint", valueName: "percent", defaultText: "90", usage: "A data dir's disk (bytes or inodes) used at or above this is a warning; 5 points higher is critical." },
  { name: "timeout", kind: "duration", valueName: "duration", defaultText: "5s", usage: "How long to wait for each agent's answer." },
];

const HELP = `
Usage: cairn doctor [options]

  Looks at a live cluster through one agent (-http-addr) and reports what is
  wrong, each finding with its severity, the evidence and the fix:

    - no leader, or a lost quorum (which servers are missing, and the
      raft/peers.json recovery when they are gone for good)
    - servers in Raft but failed in gossip, and alive in gossip but not in Raft
    - agents that disagree about membership (a split pool), or about the leader
    - gossip encryption key mismatches (decrypt failures, keyring differences)
    - clock skew between servers
    - followers trailing the leader (autopilot health)
    - version skew
    - failing and flapping health checks
    - datacenters unreachable over the WAN
    - data dirs on nearly full disks

  Exit codes: 0 nothing to act on, 1 problems found, 2 the agent could not
  be asked. -format=json prints the findings for scripts.

      $ cairn doctor -http-addr=10.0.0.5:8500
`;

/** Thrown to end the command with exit 2. */
class CouldNotAsk extends Error {}

interface Ask {
  client: ApiClient;
  timeoutMs: number;
}

async function getJson<T>(a: Ask, path: string, params?: Record<string, string | boolean>, accept?: number[]): Promise<T> {
  const r = await a.client.request({ method: "GET", path, params, accept, query: { signal: AbortSignal.timeout(a.timeoutMs) } });
  return JSON.parse(r.text) as T;
}

async function attempt<T>(fn: () => Promise<T>): Promise<{ value?: T; error?: string }> {
  try {
    return { value: await fn() };
  } catch (err) {
    return { error: apiErrorText(err) };
  }
}

const statusNames = ["none", "alive", "leaving", "left", "failed"];

function toMembers(raw: unknown): MemberFact[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((m: Record<string, unknown>) => ({
    name: String(m.Name ?? ""),
    addr: String(m.Addr ?? ""),
    port: Number(m.Port ?? 0),
    status: statusNames[Number(m.Status)] ?? `unknown(${String(m.Status)})`,
    tags: (m.Tags ?? {}) as Record<string, string>,
  }));
}

/** Gossip packets and streams that no key could decrypt, LAN and WAN, from agent/self Stats. */
function decryptFailures(self: Record<string, Record<string, unknown>>): number {
  let n = 0;
  for (const pool of ["serf_lan", "serf_wan"]) {
    const s = (self.Stats?.[pool] ?? {}) as Record<string, unknown>;
    n += Number(s.packetsDecryptFailed ?? 0) + Number(s.streamsDecryptFailed ?? 0);
  }
  return n;
}

/** Clock offset of the agent against ours from its host facts' CollectionTime (ns). */
async function hostAndClock(a: Ask): Promise<Pick<AgentView, "clock" | "disk">> {
  const sent = Date.now();
  const host = await getJson<{ CollectionTime?: number; Disk?: AgentView["disk"] }>(a, "/v1/agent/host");
  const recv = Date.now();
  const out: Pick<AgentView, "clock" | "disk"> = { disk: host.Disk ?? null };
  if (typeof host.CollectionTime === "number" && host.CollectionTime > 0) {
    out.clock = { offsetMs: host.CollectionTime / 1e6 - (sent + recv) / 2, uncertaintyMs: (recv - sent) / 2 };
  }
  return out;
}

/** What one agent says about itself and the cluster. */
async function viewOf(a: Ask, name: string, httpAddr: string): Promise<AgentView & { self?: Record<string, Record<string, unknown>> }> {
  const self = await attempt(() => getJson<Record<string, Record<string, unknown>>>(a, "/v1/agent/self"));
  if (self.error) return { name, httpAddr, error: self.error };
  const [members, leader, host] = await Promise.all([
    attempt(() => getJson<unknown>(a, "/v1/agent/members")),
    attempt(() => getJson<string>(a, "/v1/status/leader")),
    attempt(() => hostAndClock(a)),
  ]);
  return {
    name: String(self.value!.Config?.NodeName ?? name),
    httpAddr,
    self: self.value,
    members: members.value !== undefined ? toMembers(members.value) : undefined,
    leader: leader.value,
    ...(host.value ?? {}),
    decryptFailures: { before: decryptFailures(self.value!), after: decryptFailures(self.value!) },
  };
}

function hostPortOf(address: string): { host: string; port: string } {
  const bare = address.replace(/^[a-z]+:\/\//i, "").replace(/\/.*$/, "");
  const at = bare.lastIndexOf(":");
  return at < 0 ? { host: bare, port: "8500" } : { host: bare.slice(0, at), port: bare.slice(at + 1) };
}

export async function gatherFacts(o: {
  client: ApiClient;
  /** A client of another agent's API at "host:port", with the entry client's token, scheme and TLS settings. */
  clientFor: (httpAddr: string) => ApiClient;
  sampleMs: number;
  timeoutMs: number;
  now?: () => number;
}): Promise<DoctorFacts> {
  const entryAsk: Ask = { client: o.client, timeoutMs: o.timeoutMs };
  const entryAddr = o.client.address.replace(/^[a-z]+:\/\//i, "");
  const entryView = await viewOf(entryAsk, entryAddr, entryAddr);
  if (entryView.error) throw new CouldNotAsk(`Cannot ask the agent at ${entryAddr}: ${entryView.error}`);
  const self = entryView.self!;
  const server = self.Config?.Server === true;
  const datacenter = String(self.Config?.Datacenter ?? "");
  const entry = { ...entryView, server, datacenter };
  delete (entry as { self?: unknown }).self;

  const facts: DoctorFacts = { entry, servers: [], leader: entryView.leader ?? "", sampleMs: o.sampleMs };
  if (entryView.leader === undefined) {
    const l = await attempt(() => getJson<string>(entryAsk, "/v1/status/leader"));
    facts.leader = l.value ?? "";
    facts.leaderError = l.error;
  }
  const noLeader = facts.leader === "";

  // The servers, asked directly (at the member's address and its http_port tag).
  const entryPort = hostPortOf(o.client.address).port;
  const serverMembers = (entry.members ?? []).filter((m) => m.tags.role === "consul");
  const serverViews = serverMembers.map(async (m): Promise<AgentView> => {
    const httpAddr = `${m.addr.includes(":") ? `[${m.addr}]` : m.addr}:${m.tags.http_port ?? entryPort}`;
    if (m.name === entry.name) return { ...entry, httpAddr: entry.httpAddr };
    // A failed server is asked too: if it answers, gossip is cut but HTTP is not (a split pool), and its view says so.
    if (m.status !== "alive" && m.status !== "failed") return { name: m.name, httpAddr, error: `${m.status} in gossip: not asked` };
    const v = await viewOf({ client: o.clientFor(httpAddr), timeoutMs: o.timeoutMs }, m.name, httpAddr);
    delete (v as { self?: unknown }).self;
    // Without an http_port tag the address is a guess: another agent may answer there.
    if (!v.error && v.name !== m.name) return { name: m.name, httpAddr, error: `the agent at ${httpAddr} is ${v.name}, not ${m.name} (no http_port tag to find ${m.name}'s API)` };
    return v;
  });

  const [raft, autopilot, keyring, wan, servers] = await Promise.all([
    attempt(() => getJson<{ Servers?: Record<string, unknown>[] }>(entryAsk, "/v1/operator/raft/configuration", noLeader ? { stale: true } : undefined)),
    noLeader ? Promise.resolve({}) : attempt(() => getJson<{ Healthy: boolean; FailureTolerance: number; Servers?: Record<string, unknown>[] }>(entryAsk, "/v1/operator/autopilot/health", undefined, [429])), // 429: unhealthy, the same body
    attempt(() => getJson<Record<string, unknown>[]>({ ...entryAsk, timeoutMs: Math.max(o.timeoutMs, 10_000) }, "/v1/operator/keyring")),
    server ? attempt(() => getJson<unknown>(entryAsk, "/v1/agent/members", { wan: true })) : Promise.resolve({}),
    Promise.all(serverViews),
  ] as const);
  facts.servers = servers;
  if (raft.value) {
    facts.raft = (raft.value.Servers ?? []).map((s): RaftPeerFact => ({ id: String(s.ID), node: String(s.Node), address: String(s.Address), leader: s.Leader === true, voter: s.Voter === true }));
  } else facts.raftError = raft.error;
  const ap = autopilot as { value?: { Healthy: boolean; FailureTolerance: number; Servers?: Record<string, unknown>[] }; error?: string };
  if (ap.value) {
    facts.autopilot = {
      healthy: ap.value.Healthy,
      failureTolerance: ap.value.FailureTolerance,
      servers: (ap.value.Servers ?? []).map((s): AutopilotServerFact => ({
        id: String(s.ID),
        name: String(s.Name),
        address: String(s.Address),
        serfStatus: String(s.SerfStatus),
        leader: s.Leader === true,
        voter: s.Voter === true,
        healthy: s.Healthy === true,
        lastContact: String(s.LastContact ?? ""),
        lastIndex: Number(s.LastIndex ?? 0),
      })),
    };
  } else if (ap.error) facts.autopilotError = ap.error;
  if (keyring.value) {
    facts.keyring = keyring.value.map((k): KeyringPoolFact => ({
      wan: k.WAN === true,
      datacenter: String(k.Datacenter ?? ""),
      numNodes: Number(k.NumNodes ?? 0),
      keys: (k.Keys ?? {}) as Record<string, number>,
      primaryKeys: (k.PrimaryKeys ?? {}) as Record<string, number>,
      messages: (k.Messages ?? {}) as Record<string, string>,
    }));
  } else if (keyring.error && !/encryption not enabled|Keyring is empty/i.test(keyring.error)) facts.keyringError = keyring.error;
  const w = wan as { value?: unknown; error?: string };
  if (w.value !== undefined) facts.wanMembers = toMembers(w.value);
  else if (w.error) facts.wanError = w.error;

  // The sampling window: checks every 500 ms (?stale: answered without a leader too).
  const now = o.now ?? Date.now;
  const start = now();
  const samples: CheckFact[][] = [];
  let checksError: string | undefined;
  for (;;) {
    const r = await attempt(() => getJson<Record<string, unknown>[]>(entryAsk, "/v1/health/state/any", { stale: true }));
    if (r.value) {
      samples.push(r.value.map((c): CheckFact => ({
        node: String(c.Node ?? ""),
        checkId: String(c.CheckID ?? ""),
        name: String(c.Name ?? ""),
        status: String(c.Status ?? ""),
        output: String(c.Output ?? ""),
        serviceName: String(c.ServiceName ?? ""),
        modifyIndex: Number(c.ModifyIndex ?? 0),
      })));
    } else checksError = r.error;
    if (now() - start >= o.sampleMs) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(500, Math.max(0, o.sampleMs - (now() - start)))));
  }
  facts.sampleMs = now() - start;
  if (samples.length > 0) {
    const last = samples[samples.length - 1]!;
    facts.checks = last.filter((c) => c.status !== "passing");
    const histories = new Map<string, CheckHistory & { lastIndex: number }>();
    for (const sample of samples) {
      for (const c of sample) {
        const key = `${c.node}/${c.checkId}`;
        const h = histories.get(key);
        if (!h) histories.set(key, { node: c.node, checkId: c.checkId, statuses: [c.status], modifyIndexChanges: 0, lastIndex: c.modifyIndex });
        else {
          if (c.modifyIndex !== h.lastIndex) h.modifyIndexChanges++;
          h.lastIndex = c.modifyIndex;
          if (h.statuses[h.statuses.length - 1] !== c.status) h.statuses.push(c.status);
        }
      }
    }
    facts.checkHistory = [...histories.values()].filter((h) => h.statuses.length > 1).map(({ lastIndex: _, ...h }) => h);
  } else facts.checksError = checksError;

  // Decrypt-failure counters once more, at the end of the window.
  const again = async (v: AgentView, client: ApiClient): Promise<void> => {
    if (!v.decryptFailures) return;
    const s = await attempt(() => getJson<Record<string, Record<string, unknown>>>({ client, timeoutMs: o.timeoutMs }, "/v1/agent/self"));
    if (s.value) v.decryptFailures.after = decryptFailures(s.value);
  };
  await Promise.all([
    again(facts.entry, o.client),
    ...facts.servers.filter((v) => v.httpAddr !== facts.entry.httpAddr && !v.error).map((v) => again(v, o.clientFor(v.httpAddr))),
  ]);
  return facts;
}

function summaryLine(facts: DoctorFacts, problems: number): string {
  const servers = (facts.entry.members ?? []).filter((m) => m.tags.role === "consul");
  const alive = servers.filter((m) => m.status === "alive").length;
  const what = `${alive}/${servers.length} servers alive, leader ${facts.leader || "none"}, ${(facts.entry.members ?? []).length} members seen by ${facts.entry.name}`;
  return problems === 0 ? `No problems found (${what}).` : `${problems} problem${problems === 1 ? "" : "s"} found (${what}).`;
}

export const doctorCommand: Command = {
  name: "doctor",
  synopsis: "Finds what is wrong with a cluster and says how to fix it",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(doctorCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    const format = parseFormat(str(p, "format", "pretty"));
    if (!format) {
      io.stderr(`Invalid format "${str(p, "format")}": use "pretty" or "json"\n`);
      return 1;
    }
    const diskWarn = num(p, "disk-warn-percent") ?? defaultThresholds.diskWarnPercent;
    if (diskWarn > 100) {
      io.stderr(`Invalid -disk-warn-percent ${diskWarn}: at most 100\n`);
      return 1;
    }
    let client: ApiClient;
    try {
      client = apiClientFromFlags(p, io);
    } catch (err) {
      io.stderr(`${apiErrorText(err)}\n`);
      return 1;
    }
    let facts: DoctorFacts;
    try {
      const scheme = /^https:/i.test(client.address) ? "https://" : "http://";
      // Other agents are asked as the entry one: the same token and TLS flags, another address.
      const clientFor = (httpAddr: string) => apiClientFromFlags({ ...p, values: new Map(p.values).set("http-addr", `${scheme}${httpAddr}`) }, io);
      facts = await gatherFacts({ client, clientFor, sampleMs: num(p, "sample") ?? 3_000, timeoutMs: num(p, "timeout") ?? 5_000 });
    } catch (err) {
      const text = err instanceof CouldNotAsk ? err.message : apiErrorText(err);
      if (format === "json") io.stdout(`${JSON.stringify({ Healthy: false, Error: text, Findings: [] }, null, 2)}\n`);
      io.stderr(`Error: ${text}\n`);
      return 2;
    }
    const findings = analyze(facts, { ...defaultThresholds, diskWarnPercent: diskWarn, diskCriticalPercent: Math.min(100, diskWarn + 5) });
    const code = exitCodeFor(findings);
    const problems = findings.filter((x) => x.severity !== "info").length;
    if (format === "json") {
      io.stdout(`${JSON.stringify({ Healthy: code === 0, Agent: facts.entry.httpAddr, Leader: facts.leader, Findings: findings, Facts: facts }, null, 2)}\n`);
    } else {
      io.stdout(formatFindings(findings, summaryLine(facts, problems)));
    }
    return code;
  },
};
