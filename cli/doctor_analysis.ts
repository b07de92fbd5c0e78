// What `cairn doctor` concludes from what it gathered (cli/doctor.ts): a pure
// function from facts to findings, each with its evidence and its fix, so
// every rule is tested on made-up clusters without starting one.

/** A gossip member as one agent sees it. */
export interface MemberFact {
  name: string;
  addr: string;
  port: number;
  /** alive, leaving, left, failed, none */
  status: string;
  tags: Record<string, string>;
}

/** One agent asked directly over HTTP: the entry agent, or a server found through its members. */
export interface AgentView {
  /** Node name (the member's, or the agent's own). */
  name: string;
  /** "host:port" of its HTTP API. */
  httpAddr: string;
  /** Why it could not be asked at all. */
  error?: string;
  /** Its LAN pool as it sees it. */
  members?: MemberFact[];
  /** Its /v1/status/leader ("" when it knows none). */
  leader?: string;
  /** Its wall clock minus the doctor's, from /v1/agent/host CollectionTime, ± half the round trip. */
  clock?: { offsetMs: number; uncertaintyMs: number };
  /** Its data dir's file system (null: -dev, no data dir). */
  disk?: { path: string; usedPercent: number; free: number; total: number; inodesUsedPercent: number } | null;
  /** Gossip packets and streams no installed key could decrypt (LAN + WAN), at the start and end of the sampling window. */
  decryptFailures?: { before: number; after: number };
}

export interface RaftPeerFact {
  id: string;
  node: string;
  address: string;
  leader: boolean;
  voter: boolean;
}

export interface AutopilotServerFact {
  id: string;
  name: string;
  address: string;
  serfStatus: string;
  leader: boolean;
  voter: boolean;
  healthy: boolean;
  /** Go duration text ("12ms", "3.2s"). */
  lastContact: string;
  lastIndex: number;
}

export interface KeyringPoolFact {
  wan: boolean;
  datacenter: string;
  numNodes: number;
  keys: Record<string, number>;
  primaryKeys: Record<string, number>;
  messages: Record<string, string>;
}

export interface CheckFact {
  node: string;
  checkId: string;
  name: string;
  status: string;
  output: string;
  serviceName: string;
  modifyIndex: number;
}

/** A check's statuses over the sampling window, in order, and how many times its ModifyIndex moved. */
export interface CheckHistory {
  node: string;
  checkId: string;
  statuses: string[];
  modifyIndexChanges: number;
}

export interface DoctorFacts {
  /** The agent named by -http-addr. */
  entry: AgentView & { server: boolean; datacenter: string };
  /** Every server in the entry agent's LAN view; alive ones asked directly (their own `error` when that failed). */
  servers: AgentView[];
  /** The entry agent's /v1/status/leader. */
  leader: string;
  leaderError?: string;
  /** The Raft configuration (read with ?stale when there is no leader). */
  raft?: RaftPeerFact[];
  raftError?: string;
  autopilot?: { healthy: boolean; failureTolerance: number; servers: AutopilotServerFact[] };
  autopilotError?: string;
  keyring?: KeyringPoolFact[];
  keyringError?: string;
  /** Checks not passing, at the end of the window. */
  checks?: CheckFact[];
  checksError?: string;
  checkHistory?: CheckHistory[];
  /** Servers' WAN view (asked on a server). */
  wanMembers?: MemberFact[];
  wanError?: string;
  /** How long the doctor watched (clock counters, check flapping). */
  sampleMs: number;
}

export type Severity = "critical" | "warning" | "info";

export interface Finding {
  /** Stable name of the rule, for scripts: "no-leader", "server-failed", … */
  id: string;
  severity: Severity;
  title: string;
  evidence: string[];
  fix: string[];
}

export interface DoctorThresholds {
  diskWarnPercent: number;
  diskCriticalPercent: number;
  clockSkewWarnMs: number;
  /** A check whose status changed this many times in the window is flapping. */
  flapTransitions: number;
}

export const defaultThresholds: DoctorThresholds = { diskWarnPercent: 90, diskCriticalPercent: 95, clockSkewWarnMs: 1_000, flapTransitions: 2 };

const severityOrder: Record<Severity, number> = { critical: 0, warning: 1, info: 2 };

function isServer(m: MemberFact): boolean {
  return m.tags.role === "consul";
}

/** Consul's raft.ServerAddress for a server member: its gossip address with its `port` tag. */
function rpcAddress(m: MemberFact): string {
  return `${m.addr}:${m.tags.port ?? "8300"}`;
}

function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** The findings, most severe first. */
export function analyze(f: DoctorFacts, t: DoctorThresholds = defaultThresholds): Finding[] {
  const out: Finding[] = [];
  const lanView = f.entry.members ?? [];
  const serverMembers = lanView.filter(isServer);
  const memberByName = new Map(lanView.map((m) => [m.name, m]));
  const peerStatus = (p: RaftPeerFact): string => memberByName.get(p.node)?.status ?? "absent";

  // ---- leader and quorum ----
  if (f.leader === "") {
    const voters = (f.raft ?? []).filter((p) => p.voter);
    const missing = voters.filter((p) => peerStatus(p) !== "alive");
    const quorum = Math.floor(voters.length / 2) + 1;
    const evidence = [
      f.leaderError ? `/v1/status/leader on ${f.entry.httpAddr} failed: ${f.leaderError}` : `/v1/status/leader on ${f.entry.httpAddr} names no leader`,
    ];
    if (f.raft) evidence.push(`Raft voters (last known configuration): ${voters.map((p) => `${p.node} (${peerStatus(p)} in gossip)`).join(", ") || "none"}`);
    else if (f.raftError) evidence.push(`The Raft configuration could not be read: ${f.raftError}`);
    const fix: string[] = [];
    const lost = voters.length > 0 && voters.length - missing.length < quorum;
    if (lost) {
      evidence.push(`${missing.length} of ${voters.length} voters are not alive: a quorum needs ${quorum}, ${voters.length - missing.length} remain`);
      fix.push(`Start the missing servers again with their data dirs (${missing.map((p) => p.node).join(", ")}): once ${quorum} voters are up they elect a leader.`);
      const survivors = voters.filter((p) => peerStatus(p) === "alive");
      const peersJson = JSON.stringify(survivors.map((p) => ({ id: p.id, address: p.address, non_voter: false })));
      fix.push(
        `If they are gone for good, recover the remaining servers manually: stop every remaining server (${survivors.map((p) => p.node).join(", ") || "none left"}), write this to raft/peers.json in each one's data dir: ${peersJson}, then start them; cairn reads peers.json at start (renaming it peers.info), as Consul does.`,
      );
    } else if (voters.length > 0) {
      evidence.push(`${voters.length - missing.length} of ${voters.length} voters are alive in gossip: enough for a quorum of ${quorum}`);
      fix.push("An election should finish within seconds; if no leader appears, look at the servers' logs (cairn monitor -log-level=debug) for Raft errors, and check that the servers reach each other's server port (8300).");
    } else {
      fix.push("Start the servers (a datacenter needs at least one), with -bootstrap-expect set to their number.");
    }
    out.push({ id: lost ? "quorum-lost" : "no-leader", severity: "critical", title: lost ? "No cluster leader: quorum lost" : "No cluster leader", evidence, fix });
  }

  // ---- servers in Raft but not alive in gossip, and the reverse ----
  if (f.raft) {
    const raftNodes = new Set(f.raft.map((p) => p.node));
    for (const p of f.raft) {
      const status = peerStatus(p);
      if (status === "alive" || f.leader === "") continue; // without a leader the quorum finding says it
      out.push({
        id: "server-failed",
        severity: "warning",
        title: `Server ${p.node} is a Raft ${p.voter ? "voter" : "non-voter"} but ${status === "absent" ? "not in gossip" : `${status} in gossip`}`,
        evidence: [`Raft configuration lists ${p.node} (${p.id}, ${p.address})`, `${f.entry.name}'s LAN pool: ${status === "absent" ? "no such member" : `${p.node} is ${status}`}`],
        fix: [
          `Restart ${p.node} with its data dir if it is coming back.`,
          `If it is gone for good: cairn operator raft remove-peer -id=${p.id} (autopilot's cleanup_dead_servers does this by itself once the member has failed), then cairn force-leave ${p.node}.`,
        ],
      });
    }
    for (const m of serverMembers) {
      if (m.status !== "alive" || raftNodes.has(m.name) || m.tags.dc !== f.entry.datacenter) continue;
      out.push({
        id: "server-not-in-raft",
        severity: "warning",
        title: `Server ${m.name} is alive in gossip but not in the Raft configuration`,
        evidence: [`${f.entry.name}'s LAN pool: ${m.name} alive, role=consul, ${rpcAddress(m)}`, `Raft configuration: ${f.raft.map((p) => p.node).join(", ")}`],
        fix: [
          `The leader adds live servers back on its next reconcile (a gossip event or within a minute); if it stays out, restart ${m.name} (cairn leave on it, then start it again) so it joins afresh.`,
          `If it should not be a server, stop it and start it without -server.`,
        ],
      });
    }
  } else if (f.raftError && f.leader !== "") {
    out.push({ id: "raft-unreadable", severity: "warning", title: "The Raft configuration could not be read", evidence: [f.raftError], fix: ["Ask a server directly (-http-addr of a server); an operator:read token is needed once ACLs are on."] });
  }

  // ---- failed servers that are in no Raft configuration (already removed by autopilot) ----
  if (f.leader !== "") {
    const raftNodes = new Set((f.raft ?? []).map((p) => p.node));
    for (const m of serverMembers) {
      if (m.status !== "failed" || raftNodes.has(m.name)) continue;
      out.push({
        id: "server-failed",
        severity: "warning",
        title: `Server ${m.name} has failed in gossip`,
        evidence: [`${f.entry.name}'s LAN pool: ${m.name} (${m.addr}:${m.port}) failed`, f.raft ? `It is no longer in the Raft configuration (autopilot removed it): ${f.raft.length} servers remain` : "The Raft configuration was not read"],
        fix: [`Restart ${m.name} with its data dir if it is coming back (it rejoins and is added back to Raft).`, `If it is gone for good: cairn force-leave ${m.name}, and start a replacement server to restore the failure tolerance.`],
      });
    }
  }

  // ---- autopilot health: followers trailing, unhealthy servers, failure tolerance ----
  if (f.autopilot && f.leader !== "") {
    const leader = f.autopilot.servers.find((s) => s.leader);
    for (const s of f.autopilot.servers) {
      if (s.healthy || s.serfStatus !== "alive") continue; // not alive: the gossip findings say it
      const behind = leader ? leader.lastIndex - s.lastIndex : undefined;
      out.push({
        id: "server-unhealthy",
        severity: "warning",
        title: `Server ${s.name} is unhealthy: it trails the leader`,
        evidence: [
          `Autopilot health: ${s.name} Healthy=false, LastContact=${s.lastContact}, LastIndex=${s.lastIndex}${leader ? ` (leader ${leader.name} at ${leader.lastIndex}${behind !== undefined ? `, ${behind} entries behind` : ""})` : ""}`,
        ],
        fix: [
          `Look at ${s.name}'s load, disk latency and network to the leader (cairn monitor -http-addr=<${s.name}'s API>); a follower that cannot keep up is caught up with a snapshot.`,
          "Autopilot's last_contact_threshold and max_trailing_logs (cairn operator autopilot get-config) set what counts as healthy.",
        ],
      });
    }
    const voters = f.autopilot.servers.filter((s) => s.voter).length;
    if (f.autopilot.failureTolerance === 0 && voters > 0 && voters < 3 && !out.some((x) => x.id === "server-failed")) {
      out.push({
        id: "no-failure-tolerance",
        severity: "info",
        title: `The cluster tolerates no server failure (${voters} voter${voters === 1 ? "" : "s"})`,
        evidence: [`Autopilot health: FailureTolerance=0 with ${voters} voter${voters === 1 ? "" : "s"}`],
        fix: ["Run 3 or 5 servers so that one (or two) can fail without losing the quorum."],
      });
    }
  } else if (f.autopilotError && f.leader !== "") {
    out.push({ id: "autopilot-unreadable", severity: "info", title: "Autopilot health could not be read", evidence: [f.autopilotError], fix: ["Ask a server directly (-http-addr of a server)."] });
  }

  // ---- servers that could not be asked, membership views, leader views ----
  for (const s of f.servers) {
    if (!s.error) continue;
    const m = memberByName.get(s.name);
    if (m && m.status !== "alive") continue; // a failed server: the findings above say it
    out.push({
      id: "server-unreachable",
      severity: "info",
      title: `Server ${s.name}'s HTTP API could not be asked`,
      evidence: [`GET http://${s.httpAddr}/v1/agent/self: ${s.error}`],
      fix: [
        `Its own view of membership, its clock and its disk were not checked. The doctor reaches a server at its gossip address and its http_port tag (or -http-addr's port): if its HTTP API listens on another address (client_addr 127.0.0.1 on another host), run cairn doctor there too.`,
      ],
    });
  }
  const asked = [f.entry, ...f.servers.filter((s) => s.httpAddr !== f.entry.httpAddr)].filter((v) => v.members && !v.error);
  if (asked.length > 1) {
    const names = new Set(asked.flatMap((v) => v.members!.map((m) => m.name)));
    const disagreements: string[] = [];
    for (const name of [...names].sort()) {
      const views = asked.map((v) => ({ by: v.name, status: v.members!.find((m) => m.name === name)?.status ?? "absent" }));
      // An agent's view of a member that is not alive may lag by the suspicion timeout: only alive against not-alive counts.
      const alive = views.filter((x) => x.status === "alive");
      const notAlive = views.filter((x) => x.status !== "alive" && x.by !== name);
      if (alive.length > 0 && notAlive.length > 0) disagreements.push(`${name}: ${views.map((x) => `${x.by} sees ${x.status}`).join(", ")}`);
    }
    if (disagreements.length > 0) {
      out.push({
        id: "membership-disagreement",
        severity: "warning",
        title: "Agents disagree about who is alive (the gossip pool may be split)",
        evidence: disagreements.slice(0, 20),
        fix: [
          "Check that every agent reaches every other on the LAN gossip port (8301, TCP and UDP); a firewall or a bind/advertise address others cannot reach splits the pool.",
          "Join the parts again: cairn join <address of an agent in the other part>, run on one side.",
        ],
      });
    }
    const leaders = new Map<string, string[]>();
    for (const v of asked) if (v.leader !== undefined) leaders.set(v.leader, [...(leaders.get(v.leader) ?? []), v.name]);
    if (leaders.size > 1) {
      out.push({
        id: "leader-disagreement",
        severity: "warning",
        title: "Servers name different leaders",
        evidence: [...leaders].map(([l, by]) => `${by.join(", ")}: leader "${l}"`),
        fix: ["A leader change may have been in progress: run cairn doctor again. If it persists, the servers do not all reach each other on the server port (8300)."],
      });
    }
  }

  // ---- gossip encryption ----
  const decrypt = asked.filter((v) => v.decryptFailures && v.decryptFailures.after > v.decryptFailures.before);
  if (decrypt.length > 0) {
    out.push({
      id: "gossip-key-mismatch",
      severity: "warning",
      title: "Gossip arrives that no installed key can decrypt: an agent uses another encryption key",
      evidence: decrypt.map((v) => `${v.name}: ${v.decryptFailures!.after - v.decryptFailures!.before} packets or streams failed to decrypt in ${Math.round(f.sampleMs / 1000)}s (${v.decryptFailures!.after} since it started)`),
      fix: [
        "Find the agent whose logs say it cannot join (its -encrypt or keyring file differs), and give it the cluster's key: cairn keyring -list shows the keys in use.",
        "While rotating keys: cairn keyring -install=<new key> on the cluster first, then -use, then -remove the old one, so every agent holds both keys during the change.",
      ],
    });
  }
  for (const pool of f.keyring ?? []) {
    const where = pool.wan ? "WAN pool" : `LAN pool of ${pool.datacenter}`;
    const partial = Object.entries(pool.keys).filter(([, n]) => n < pool.numNodes);
    if (partial.length > 0) {
      out.push({
        id: "keyring-partial",
        severity: "warning",
        title: `Not every agent in the ${where} has the same gossip keys`,
        evidence: [`${pool.numNodes} nodes answered the keyring list`, ...partial.map(([k, n]) => `key ${k.slice(0, 6)}… is installed on ${n} of ${pool.numNodes} nodes`)],
        fix: [`Install the missing key everywhere (cairn keyring -install=<key>), or remove it where it should no longer be (cairn keyring -remove=<key>).`],
      });
    }
    const primaries = Object.entries(pool.primaryKeys);
    if (primaries.length > 1) {
      out.push({
        id: "keyring-primary-split",
        severity: "warning",
        title: `Agents in the ${where} encrypt with different primary keys`,
        evidence: primaries.map(([k, n]) => `${n} nodes use ${k.slice(0, 6)}… as their primary key`),
        fix: ["Finish the rotation: cairn keyring -use=<the key every agent should use>."],
      });
    }
    const errors = Object.entries(pool.messages);
    if (errors.length > 0) {
      out.push({ id: "keyring-errors", severity: "warning", title: `Some agents in the ${where} failed the keyring list`, evidence: errors.map(([n, msg]) => `${n}: ${msg}`), fix: ["Look at those agents' logs; an agent that cannot answer may also be unable to rotate keys."] });
    }
  }

  // ---- clocks ----
  const clocks = asked.filter((v) => v.clock);
  if (clocks.length > 1) {
    const sorted = [...clocks].sort((a, b) => a.clock!.offsetMs - b.clock!.offsetMs);
    const lo = sorted[0]!;
    const hi = sorted[sorted.length - 1]!;
    const skew = hi.clock!.offsetMs - lo.clock!.offsetMs;
    const slack = hi.clock!.uncertaintyMs + lo.clock!.uncertaintyMs;
    if (skew - slack > t.clockSkewWarnMs) {
      out.push({
        id: "clock-skew",
        severity: "warning",
        title: `Clocks differ by about ${(skew / 1000).toFixed(1)}s`,
        evidence: sorted.map((v) => `${v.name}: ${v.clock!.offsetMs >= 0 ? "+" : ""}${Math.round(v.clock!.offsetMs)} ms (±${Math.round(v.clock!.uncertaintyMs)} ms) against this machine's clock`),
        fix: ["Run NTP (chrony, systemd-timesyncd) on every machine: session TTLs, lock delays and log times assume clocks that agree."],
      });
    }
  }

  // ---- versions ----
  const skew = versionSkew(lanView.filter((m) => m.status === "alive"));
  if (skew) out.push(skew);

  // ---- checks ----
  const history = new Map((f.checkHistory ?? []).map((h) => [`${h.node}/${h.checkId}`, h]));
  for (const c of f.checks ?? []) {
    if (c.checkId === "serfHealth") continue; // a failed node: the membership findings say it
    const h = history.get(`${c.node}/${c.checkId}`);
    out.push({
      id: c.status === "critical" ? "check-critical" : "check-warning",
      severity: c.status === "critical" ? "warning" : "info",
      title: `Check "${c.name}" on ${c.node} is ${c.status}${c.serviceName ? ` (service ${c.serviceName})` : ""}`,
      evidence: [`/v1/health/state: ${c.node} ${c.checkId} ${c.status}`, ...(c.output.trim() ? [`Output: ${c.output.trim().slice(0, 300)}`] : []), ...(h ? [`Status over ${Math.round(f.sampleMs / 1000)}s: ${h.statuses.join(" → ")}`] : [])],
      fix: [c.serviceName ? `Fix service ${c.serviceName} on ${c.node}, or put it in maintenance while you do (cairn maint -enable -service=${c.checkId.startsWith("service:") ? c.checkId.slice(8) : "<service id>"} on ${c.node}).` : `Fix what the check watches on ${c.node}.`, `The check's definition and latest output: curl http://<${c.node}'s API>/v1/agent/checks`],
    });
  }
  for (const h of f.checkHistory ?? []) {
    let transitions = 0;
    for (let i = 1; i < h.statuses.length; i++) if (h.statuses[i] !== h.statuses[i - 1]) transitions++;
    if (transitions < t.flapTransitions) continue;
    out.push({
      id: "check-flapping",
      severity: "warning",
      title: `Check ${h.checkId} on ${h.node} is flapping`,
      evidence: [`Sampled every ~500 ms for ${Math.round(f.sampleMs / 1000)}s: ${h.statuses.join(" → ")} (${transitions} status changes, ModifyIndex moved ${h.modifyIndexChanges} times)`],
      fix: ["A check that flips between passing and critical usually has a timeout close to the service's answer time, or watches an overloaded dependency: widen its timeout or interval, or set success_before_passing / failures_before_critical on it."],
    });
  }
  if (f.checksError) out.push({ id: "checks-unreadable", severity: "info", title: "Health checks could not be read", evidence: [f.checksError], fix: ["Ask again once a leader is elected, or read them on a server with ?stale."] });

  // ---- WAN ----
  if (f.wanMembers) {
    const byDc = new Map<string, MemberFact[]>();
    for (const m of f.wanMembers) byDc.set(m.tags.dc ?? "?", [...(byDc.get(m.tags.dc ?? "?") ?? []), m]);
    for (const [dc, members] of [...byDc].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const failed = members.filter((m) => m.status === "failed");
      if (failed.length === 0) continue;
      const all = failed.length === members.filter((m) => m.status !== "left").length;
      out.push({
        id: all ? "datacenter-unreachable" : "wan-member-failed",
        severity: all ? "critical" : "warning",
        title: all ? `Datacenter ${dc} is unreachable over the WAN` : `${failed.length} server${failed.length === 1 ? "" : "s"} of ${dc} failed in the WAN pool`,
        evidence: failed.map((m) => `WAN pool: ${m.name} (${m.addr}:${m.port}) failed`),
        fix: [
          all ? `Requests for ?dc=${dc} fail until one of its servers is reachable: check that servers reach each other's WAN gossip port (8302) and server port (8300).` : `Restart the failed servers of ${dc}, or cairn force-leave -wan <name> for those gone for good.`,
        ],
      });
    }
  }

  // ---- disks ----
  for (const v of asked) {
    const d = v.disk;
    if (!d) continue;
    const pct = Math.max(d.usedPercent, d.inodesUsedPercent);
    if (pct < t.diskWarnPercent) continue;
    const critical = pct >= t.diskCriticalPercent;
    out.push({
      id: "disk-full",
      severity: critical ? "critical" : "warning",
      title: `${v.name}'s data dir is on a nearly full disk (${pct.toFixed(1)}%)`,
      evidence: [`statfs ${d.path}: ${d.usedPercent.toFixed(1)}% used, ${bytes(d.free)} free of ${bytes(d.total)}, inodes ${d.inodesUsedPercent.toFixed(1)}% used`],
      fix: [
        `Free space on ${v.name} or grow the volume: a server whose Raft log cannot be written stops (exits 1).`,
        "Lower raft_trailing_logs and raft_snapshot_threshold to keep less log, and remove old snapshots other tools left there.",
      ],
    });
  }

  return out.sort((a, b) => severityOrder[a.severity] - severityOrder[b.severity]);
}

/** "1.15.2-dev" → [1, 15, 2]; undefined when the text is no version. */
function parseVersion(v: string): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(v);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) if (a[i]! !== b[i]!) return a[i]! - b[i]!;
  return 0;
}

/**
 * Alive members whose `build` tags (`<version>:<revision>`) name different
 * versions. Consul's upgrade order is servers first, one at a time, then the
 * clients, and each release speaks to the one before it: servers that differ
 * are an upgrade to finish (warning); a client newer than the servers, or more
 * than one minor release behind the newest, is out of that order (warning); a
 * client at most one minor release behind is where a rollout normally stands
 * (info). Members without a build tag are left out: nothing to compare.
 */
function versionSkew(alive: readonly MemberFact[]): Finding | undefined {
  const known = alive.map((m) => ({ m, v: (m.tags.build ?? "").split(":")[0]! })).filter((x) => x.v !== "");
  if (new Set(known.map((x) => x.v)).size < 2) return undefined;
  const servers = known.filter((x) => isServer(x.m));
  const serverVersions = [...new Set(servers.map((x) => x.v))];
  const parsed = serverVersions.map(parseVersion).filter((v): v is [number, number, number] => v !== undefined);
  const oldest = parsed.length ? parsed.reduce((a, b) => (compareVersions(a, b) <= 0 ? a : b)) : undefined;
  const newest = parsed.length ? parsed.reduce((a, b) => (compareVersions(a, b) >= 0 ? a : b)) : undefined;
  const ahead: string[] = [];
  const farBehind: string[] = [];
  for (const x of known) {
    if (isServer(x.m) || !oldest || !newest) continue;
    const v = parseVersion(x.v);
    if (!v) continue;
    if (compareVersions(v, oldest) > 0) ahead.push(x.m.name);
    else if (v[0] < newest[0] || newest[1] - v[1] > 1) farBehind.push(x.m.name);
  }
  const groups = new Map<string, string[]>();
  for (const x of known) {
    const k = `${x.v} (${isServer(x.m) ? "server" : "client"})`;
    groups.set(k, [...(groups.get(k) ?? []), x.m.name]);
  }
  const list = (names: string[]) => (names.length <= 8 ? names.join(", ") : `${names.slice(0, 8).join(", ")} and ${names.length - 8} more`);
  const evidence = [...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, names]) => `${k}: ${list(names)}`);
  const serverText = serverVersions.length ? serverVersions.sort().join(" and ") : "unknown";
  if (serverVersions.length > 1) {
    return {
      id: "version-skew",
      severity: "warning",
      title: `Servers run different versions (${serverText})`,
      evidence,
      fix: ["Finish the upgrade: the remaining servers one at a time (wait for cairn operator autopilot state to show every server healthy between them), then the clients."],
    };
  }
  if (ahead.length > 0) {
    return {
      id: "version-skew",
      severity: "warning",
      title: `Clients run a newer version than the servers (${serverText}): ${list(ahead)}`,
      evidence,
      fix: [`Upgrade the servers first, one at a time, to the clients' version, or put ${list(ahead)} back on ${serverText}: a client ahead of its servers may ask for what they cannot do.`],
    };
  }
  if (farBehind.length > 0) {
    return {
      id: "version-skew",
      severity: "warning",
      title: `Clients lag the servers (${serverText}) by more than one minor release: ${list(farBehind)}`,
      evidence,
      fix: [`Upgrade ${list(farBehind)} to ${serverText}: each release is only promised to speak to the one before it.`],
    };
  }
  return {
    id: "version-skew",
    severity: "info",
    title: serverVersions.length ? `Some clients still run an older version than the servers (${serverText}), within one minor release` : "Agents run different versions (no server's build is known)",
    evidence,
    fix: ["Servers first, then clients is the upgrade order; roll the remaining clients forward when convenient."],
  };
}

/** Exit code: 0 nothing to act on (info only), 1 problems found. (2, could not ask, is decided before analysis.) */
export function exitCodeFor(findings: readonly Finding[]): 0 | 1 {
  return findings.some((x) => x.severity !== "info") ? 1 : 0;
}

/** One block per finding: severity and title, then evidence and fix. */
export function formatFindings(findings: readonly Finding[], summary: string): string {
  const blocks = findings.map((x) =>
    [
      `[${x.severity.toUpperCase()}] ${x.title}`,
      "  Evidence:",
      ...x.evidence.map((e) => `    - ${e}`),
      "  Fix:",
      ...x.fix.map((e) => `    - ${e}`),
    ].join("\n")
  );
  return [...blocks, summary].join("\n\n") + "\n";
}
