import { test } from "node:test";
import assert from "node:assert/strict";
import { parseDuration as parseGoDurationMs } from "../core/config/duration.ts";
import { analyze, exitCodeFor, formatFindings, type AgentView, type DoctorFacts, type MemberFact } from "./doctor_analysis.ts";

function member(name: string, o: { status?: string; server?: boolean; build?: string; dc?: string } = {}): MemberFact {
  const i = Number(name.replace(/\D/g, "")) || 9;
  return {
    name,
    addr: `10.0.0.${i}`,
    port: 8301,
    status: o.status ?? "alive",
    tags: { role: o.server === false ? "node" : "consul", dc: o.dc ?? "dc1", port: "8300", build: `${o.build ?? "0.1.0"}:abc`, id: `id-${name}` },
  };
}

function view(name: string, members: MemberFact[], extra: Partial<AgentView> = {}): AgentView {
  return {
    name,
    httpAddr: `10.0.0.${name.replace(/\D/g, "")}:8500`,
    members,
    leader: "10.0.0.1:8300",
    clock: { offsetMs: 0, uncertaintyMs: 1 },
    disk: { path: "/data", usedPercent: 40, free: 60e9, total: 100e9, inodesUsedPercent: 1 },
    decryptFailures: { before: 0, after: 0 },
    ...extra,
  };
}

/** A healthy 3-server cluster seen from s1, then changed by `edit`. */
function cluster(edit: (f: DoctorFacts) => void = () => {}): DoctorFacts {
  const members = [member("s1"), member("s2"), member("s3"), member("c4", { server: false })];
  const f: DoctorFacts = {
    entry: { ...view("s1", members), server: true, datacenter: "dc1" },
    servers: [view("s1", members), view("s2", members), view("s3", members)],
    leader: "10.0.0.1:8300",
    raft: ["s1", "s2", "s3"].map((n, i) => ({ id: `id-${n}`, node: n, address: `10.0.0.${i + 1}:8300`, leader: i === 0, voter: true })),
    autopilot: {
      healthy: true,
      failureTolerance: 1,
      servers: ["s1", "s2", "s3"].map((n, i) => ({ id: `id-${n}`, name: n, address: `10.0.0.${i + 1}:8300`, serfStatus: "alive", leader: i === 0, voter: true, healthy: true, lastContact: "5ms", lastIndex: 100 })),
    },
    keyring: [{ wan: false, datacenter: "dc1", numNodes: 4, keys: { K1: 4 }, primaryKeys: { K1: 4 }, messages: {} }],
    checks: [],
    checkHistory: [],
    wanMembers: ["s1", "s2", "s3"].map((n) => ({ ...member(n), name: `${n}.dc1` })),
    sampleMs: 3000,
  };
  f.servers[0] = { ...f.entry };
  edit(f);
  return f;
}

const ids = (f: DoctorFacts) => analyze(f).map((x) => x.id);

test("doctor: a healthy cluster has no findings and exits 0", () => {
  const findings = analyze(cluster());
  assert.deepEqual(findings, []);
  assert.equal(exitCodeFor(findings), 0);
  assert.match(formatFindings(findings, "No problems found."), /^No problems found\.\n$/);
});

test("doctor: no leader with a quorum lost names the missing servers and the peers.json recovery", () => {
  const f = cluster((f) => {
    f.leader = "";
    f.entry.members = [member("s1"), member("s2", { status: "failed" }), member("s3", { status: "failed" })];
  });
  const [x, ...rest] = analyze(f);
  assert.equal(x!.id, "quorum-lost");
  assert.equal(x!.severity, "critical");
  assert.ok(x!.evidence.some((e) => /s2 \(failed in gossip\)/.test(e) && /s3 \(failed in gossip\)/.test(e)));
  assert.ok(x!.evidence.some((e) => /2 of 3 voters are not alive: a quorum needs 2, 1 remain/.test(e)));
  assert.ok(x!.fix.some((e) => e.includes('[{"id":"id-s1","address":"10.0.0.1:8300","non_voter":false}]') && e.includes("peers.json")));
  assert.ok(!rest.some((r) => r.id === "server-failed"), "the quorum finding covers the failed peers");
  assert.equal(exitCodeFor([x!, ...rest]), 1);
  // Without a leader but with a quorum alive: an election is due, not a recovery.
  const g = cluster((f) => (f.leader = ""));
  assert.equal(analyze(g)[0]!.id, "no-leader");
});

test("doctor: a raft peer failed in gossip, a failed server autopilot removed, a live server not in raft", () => {
  assert.deepEqual(ids(cluster((f) => (f.entry.members![2] = member("s3", { status: "failed" })))), ["server-failed"]);
  const removed = cluster((f) => {
    f.entry.members![2] = member("s3", { status: "failed" });
    f.raft = f.raft!.slice(0, 2);
  });
  const [r] = analyze(removed);
  assert.equal(r!.id, "server-failed");
  assert.match(r!.fix.join(" "), /force-leave s3/);
  const notInRaft = analyze(cluster((f) => (f.raft = f.raft!.slice(0, 2))));
  assert.equal(notInRaft[0]!.id, "server-not-in-raft");
  assert.match(notInRaft[0]!.title, /s3 is alive in gossip but not in the Raft configuration/);
});

test("doctor: membership views that disagree, and leaders that differ", () => {
  const split = cluster((f) => {
    f.servers[2] = view("s3", [member("s1", { status: "failed" }), member("s2", { status: "failed" }), member("s3"), member("c4", { server: false })]);
  });
  const x = analyze(split).find((x) => x.id === "membership-disagreement")!;
  assert.ok(x.evidence.some((e) => e.startsWith("s1: s1 sees alive, s2 sees alive, s3 sees failed")));
  const leaders = cluster((f) => (f.servers[1] = view("s2", f.entry.members!, { leader: "10.0.0.2:8300" })));
  assert.ok(ids(leaders).includes("leader-disagreement"));
});

test("doctor: gossip key mismatch from decrypt failures over the window, and keyring differences", () => {
  const f = cluster((f) => (f.servers[1] = view("s2", f.entry.members!, { decryptFailures: { before: 3, after: 9 } })));
  const x = analyze(f).find((x) => x.id === "gossip-key-mismatch")!;
  assert.match(x.evidence[0]!, /s2: 6 packets or streams failed to decrypt in 3s/);
  const ring = cluster((f) => (f.keyring = [{ wan: false, datacenter: "dc1", numNodes: 4, keys: { K1: 4, K2: 2 }, primaryKeys: { K1: 3, K2: 1 }, messages: { c4: "boom" } }]));
  assert.deepEqual(ids(ring).sort(), ["keyring-errors", "keyring-partial", "keyring-primary-split"]);
});

test("doctor: clock skew beyond the round-trip uncertainty", () => {
  const skewed = cluster((f) => (f.servers[2] = view("s3", f.entry.members!, { clock: { offsetMs: 4_000, uncertaintyMs: 2 } })));
  const x = analyze(skewed).find((x) => x.id === "clock-skew")!;
  assert.match(x.title, /about 4\.0s/);
  // 1.5 s apart but measured ±600 ms: not claimed.
  const unsure = cluster((f) => (f.servers[2] = view("s3", f.entry.members!, { clock: { offsetMs: 1_500, uncertaintyMs: 600 } })));
  assert.ok(!ids(unsure).includes("clock-skew"));
});

test("doctor: an unhealthy follower trailing the leader", () => {
  const f = cluster((f) => {
    const s = f.autopilot!.servers[2]!;
    f.autopilot!.servers[2] = { ...s, healthy: false, lastContact: "4.2s", lastIndex: 40 };
  });
  const x = analyze(f).find((x) => x.id === "server-unhealthy")!;
  assert.match(x.evidence[0]!, /s3 Healthy=false, LastContact=4\.2s, LastIndex=40 \(leader s1 at 100, 60 entries behind\)/);
});

test("doctor: version skew among servers is a warning, a client one minor release behind only information", () => {
  const servers = analyze(cluster((f) => (f.entry.members![1] = member("s2", { build: "0.2.0" }))));
  const s = servers.find((x) => x.id === "version-skew")!;
  assert.equal(s.severity, "warning");
  assert.equal(s.title, "Servers run different versions (0.1.0 and 0.2.0)");
  assert.deepEqual(s.evidence, ["0.1.0 (client): c4", "0.1.0 (server): s1, s3", "0.2.0 (server): s2"]);
  const clients = analyze(cluster((f) => (f.entry.members![3] = member("c4", { server: false, build: "0.0.9" }))));
  const c = clients.find((x) => x.id === "version-skew")!;
  assert.equal(c.severity, "info");
  assert.match(c.title, /older version than the servers \(0\.1\.0\), within one minor release/);
  assert.equal(exitCodeFor(clients), 0);
});

test("doctor: a client newer than the servers, or more than one minor release behind, is a warning", () => {
  const ahead = analyze(cluster((f) => (f.entry.members![3] = member("c4", { server: false, build: "0.1.1" }))));
  const a = ahead.find((x) => x.id === "version-skew")!;
  assert.equal(a.severity, "warning");
  assert.equal(a.title, "Clients run a newer version than the servers (0.1.0): c4");
  assert.match(a.fix[0]!, /^Upgrade the servers first/);
  assert.equal(exitCodeFor(ahead), 1);
  const behind = analyze(cluster((f) => {
    f.entry.members = f.entry.members!.map((m) => (m.name === "c4" ? member("c4", { server: false, build: "1.13.2" }) : member(m.name, { build: "1.15.0" })));
  }));
  const b = behind.find((x) => x.id === "version-skew")!;
  assert.equal(b.severity, "warning");
  assert.equal(b.title, "Clients lag the servers (1.15.0) by more than one minor release: c4");
  // A prerelease suffix and a member without a build tag (a plain Serf agent) do not make a skew of their own.
  const same = analyze(cluster((f) => {
    f.entry.members = [...f.entry.members!.map((m) => member(m.name, { server: m.tags.role === "consul", build: "1.15.0-dev" })), { ...member("x9", { server: false }), tags: { role: "node" } }];
  }));
  assert.ok(!same.some((x) => x.id === "version-skew"), same.map((x) => x.id).join(" "));
});

test("doctor: failing checks (serfHealth left to the membership findings) and flapping ones", () => {
  const f = cluster((f) => {
    f.checks = [
      { node: "c4", checkId: "service:web", name: "web alive", status: "critical", output: "connection refused", serviceName: "web", modifyIndex: 9 },
      { node: "c4", checkId: "mem", name: "memory", status: "warning", output: "", serviceName: "", modifyIndex: 9 },
      { node: "s3", checkId: "serfHealth", name: "Serf Health Status", status: "critical", output: "", serviceName: "", modifyIndex: 9 },
    ];
    f.checkHistory = [
      { node: "c4", checkId: "flappy", statuses: ["passing", "critical", "passing"], modifyIndexChanges: 4 },
      { node: "c4", checkId: "once", statuses: ["passing", "critical"], modifyIndexChanges: 1 },
    ];
  });
  const findings = analyze(f);
  const critical = findings.find((x) => x.id === "check-critical")!;
  assert.match(critical.title, /Check "web alive" on c4 is critical \(service web\)/);
  assert.ok(critical.evidence.includes("Output: connection refused"));
  assert.equal(findings.find((x) => x.id === "check-warning")!.severity, "info");
  const flap = findings.filter((x) => x.id === "check-flapping");
  assert.equal(flap.length, 1);
  assert.match(flap[0]!.evidence[0]!, /passing → critical → passing \(2 status changes, ModifyIndex moved 4 times\)/);
  assert.ok(!findings.some((x) => x.title.includes("serfHealth")));
});

test("doctor: WAN members failed, a whole datacenter unreachable", () => {
  const f = cluster((f) => {
    f.wanMembers = [...f.wanMembers!, { ...member("s7", { dc: "dc2", status: "failed" }), name: "s7.dc2" }, { ...member("s8", { dc: "dc3", status: "failed" }), name: "s8.dc3" }, { ...member("s9", { dc: "dc3" }), name: "s9.dc3" }];
  });
  const findings = analyze(f);
  assert.equal(findings.find((x) => x.id === "datacenter-unreachable")!.title, "Datacenter dc2 is unreachable over the WAN");
  assert.equal(findings.find((x) => x.id === "wan-member-failed")!.title, "1 server of dc3 failed in the WAN pool");
});

test("doctor: a nearly full data dir disk, by bytes or by inodes", () => {
  const f = cluster((f) => {
    f.servers[1] = view("s2", f.entry.members!, { disk: { path: "/data", usedPercent: 96.5, free: 3.5e9, total: 100e9, inodesUsedPercent: 10 } });
    f.servers[2] = view("s3", f.entry.members!, { disk: { path: "/data", usedPercent: 10, free: 90e9, total: 100e9, inodesUsedPercent: 91 } });
  });
  const disks = analyze(f).filter((x) => x.id === "disk-full");
  assert.deepEqual(disks.map((x) => [x.title.split("'")[0], x.severity]), [["s2", "critical"], ["s3", "warning"]]);
  assert.match(disks[0]!.evidence[0]!, /96\.5% used, 3\.3 GiB free of 93\.1 GiB/);
});

test("doctor: a server whose API cannot be reached is information, not a problem", () => {
  const f = cluster((f) => (f.servers[2] = { name: "s3", httpAddr: "10.0.0.3:8500", error: "connection refused" }));
  const findings = analyze(f);
  assert.deepEqual(findings.map((x) => [x.id, x.severity]), [["server-unreachable", "info"]]);
  assert.equal(exitCodeFor(findings), 0);
});

test("Go durations", () => {
  assert.equal(parseGoDurationMs("4.2s"), 4200);
  assert.equal(parseGoDurationMs("1m30s"), 90_000);
  assert.equal(parseGoDurationMs("250ms"), 250);
  assert.equal(parseGoDurationMs("x"), undefined);
});
