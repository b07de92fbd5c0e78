import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testIo } from "./_testing.ts";
import { tarGzDirectory } from "./_tar.ts";
import { formatDuration as goDuration } from "../core/config/duration.ts";
import { bundleTimestamp, debugCommand } from "./debug.ts";
import { redactJson, scrubChunks, scrubText } from "./debug_redact.ts";

test("redactJson: secret-named string fields hidden and remembered, facts about secrets kept", () => {
  const found = new Set<string>();
  const out = redactJson({
    DebugConfig: { EncryptKey: "k3y-base64==", ACLTokens: { ACLAgentToken: "tok-1" }, RetryJoin: ["a"] },
    Stats: { serf_lan: { encrypted: "true" } },
    list: [{ Token: "tok-2" }, { SecretID: "s-3", Name: "n" }],
    tls: { private_key: "PEM", KeyFile: "/etc/key.pem" },
    empty: { Token: "" },
  }, found);
  assert.deepEqual(out, {
    DebugConfig: { EncryptKey: "hidden", ACLTokens: { ACLAgentToken: "hidden" }, RetryJoin: ["a"] },
    Stats: { serf_lan: { encrypted: "true" } },
    list: [{ Token: "hidden" }, { SecretID: "hidden", Name: "n" }],
    tls: { private_key: "hidden", KeyFile: "/etc/key.pem" },
    empty: { Token: "" },
  });
  assert.deepEqual([...found].sort(), ["PEM", "k3y-base64==", "s-3", "tok-1", "tok-2"]);
});

test("scrubText: every occurrence, also JSON-escaped; too-short secrets ignored", () => {
  assert.equal(scrubText("a tok-123 b tok-123", ["tok-123"]), "a hidden b hidden");
  assert.equal(scrubText('{"x":"a\\"bcd"}', ['a"bcd']), '{"x":"hidden"}');
  assert.equal(scrubText("abc", ["ab"]), "abc");
});

test("bundle names and durations read as Consul's", () => {
  assert.equal(bundleTimestamp(Date.UTC(2026, 0, 2, 3, 4, 5)), "2026-01-02T03-04-05Z");
  assert.equal(goDuration(1000), "1s");
  assert.equal(goDuration(302_000), "5m2s");
  assert.equal(goDuration(3_600_000), "1h0m0s");
});

test("tar.gz of a directory: tar lists and extracts it as written", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-tar-"));
  try {
    const dir = join(root, "bundle");
    mkdirSync(join(dir, "2026-01-02T03-04-05Z"), { recursive: true });
    writeFileSync(join(dir, "index.json"), '{"Version":1}\n');
    writeFileSync(join(dir, "2026-01-02T03-04-05Z", "metrics.json"), "x".repeat(1500));
    const long = "d".repeat(90);
    mkdirSync(join(dir, long));
    writeFileSync(join(dir, long, "f".repeat(60)), "deep");
    writeFileSync(join(root, "b.tar.gz"), tarGzDirectory(dir));
    const listed = spawnSync("tar", ["-tzf", join(root, "b.tar.gz")], { encoding: "utf8" });
    assert.equal(listed.status, 0, listed.stderr);
    assert.deepEqual(listed.stdout.trim().split("\n"), [
      "bundle/",
      "bundle/2026-01-02T03-04-05Z/",
      "bundle/2026-01-02T03-04-05Z/metrics.json",
      `bundle/${long}/`,
      `bundle/${long}/${"f".repeat(60)}`,
      "bundle/index.json",
    ]);
    const out = join(root, "x");
    mkdirSync(out);
    assert.equal(spawnSync("tar", ["-xzf", join(root, "b.tar.gz"), "-C", out]).status, 0);
    assert.equal(readFileSync(join(out, "bundle", "2026-01-02T03-04-05Z", "metrics.json"), "utf8"), "x".repeat(1500));
    assert.equal(readFileSync(join(out, "bundle", long, "f".repeat(60)), "utf8"), "deep");
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

/** An agent that answers what debug asks, recording the paths. */
function fakeAgent(o: { enableDebug: boolean; token?: string }) {
  const paths: string[] = [];
  const json = (v: unknown) => new Response(JSON.stringify(v), { status: 200, headers: { "Content-Type": "application/json" } });
  const fetch = async (input: string | URL | Request): Promise<Response> => {
    const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
    paths.push(url.pathname);
    switch (url.pathname) {
      case "/v1/agent/self":
        return json({ Config: { Version: "0.1.0" }, DebugConfig: { EnableDebug: o.enableDebug, ACLsEnabled: false, EncryptKey: "hidden", Tokens: { Agent: "agent-token-xyz" } } });
      case "/v1/agent/host":
        return json({ Host: { hostname: "h" } });
      case "/v1/agent/members":
        return json([{ Name: "n1", Tags: { role: "consul" } }]);
      case "/v1/agent/metrics":
        return json({ Gauges: [] });
      case "/v1/agent/monitor":
        return new Response(`line with agent-token-xyz and ${o.token ?? "none"}\n`);
      case "/v1/agent/debug/profile":
        return new Response('{"nodes":[]}');
      case "/v1/agent/debug/heap":
        return new Response('{"strings":["x"]}');
      case "/v1/operator/raft/configuration":
        return json({ Servers: [] });
    }
    return new Response("no", { status: 404 });
  };
  return { fetch: fetch as typeof globalThis.fetch, paths };
}

test("cairn debug: the bundle's files, secrets scrubbed everywhere, pprof skipped without enable_debug", async () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-debug-"));
  try {
    const agent = fakeAgent({ enableDebug: true, token: "cli-token-abc" });
    const io = testIo();
    io.fetch = agent.fetch;
    const out = join(root, "b1");
    const code = await debugCommand.run(["-duration=1s", "-interval=1s", `-output=${out}`, "-archive=false", "-token=cli-token-abc"], io);
    assert.equal(code, 0, io.stderrText);
    const files = readdirSync(out).sort();
    assert.ok(files.some((f) => /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ$/.test(f)), files.join(","));
    for (const f of ["agent.json", "consul.log", "heap.heapsnapshot", "host.json", "index.json", "members.json", "profile.cpuprofile", "raft.json"]) assert.ok(files.includes(f), f);
    const all = files.filter((f) => f.includes(".")).map((f) => readFileSync(join(out, f), "utf8")).join("\n");
    assert.ok(!all.includes("agent-token-xyz") && !all.includes("cli-token-abc"));
    assert.match(readFileSync(join(out, "consul.log"), "utf8"), /line with hidden and hidden/);
    const index = JSON.parse(readFileSync(join(out, "index.json"), "utf8")) as Record<string, unknown>;
    assert.equal(index.Version, 1);
    assert.equal(index.AgentVersion, "0.1.0");
    assert.deepEqual(index.Targets, ["metrics", "logs", "pprof", "host", "agent", "members"]);

    const off = fakeAgent({ enableDebug: false });
    const io2 = testIo();
    io2.fetch = off.fetch;
    assert.equal(await debugCommand.run(["-duration=1s", "-interval=1s", `-output=${join(root, "b2")}`, "-capture=agent", "-capture=pprof"], io2), 0, io2.stderrText);
    assert.match(io2.stderrText, /Unable to capture pprof/);
    assert.ok(!off.paths.some((p) => p.startsWith("/v1/agent/debug/")));
    assert.ok(existsSync(join(root, "b2.tar.gz")) && !existsSync(join(root, "b2")));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("cairn debug: bad timings, unknown targets, an existing output and no agent are refused (exit 1)", async () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-debug-"));
  try {
    const agent = fakeAgent({ enableDebug: true });
    const run = async (args: string[], fetch = agent.fetch) => {
      const io = testIo();
      io.fetch = fetch;
      return { code: await debugCommand.run(args, io), err: io.stderrText };
    };
    assert.match((await run(["-duration=1s", "-interval=2s"])).err, /must be longer than interval/);
    assert.match((await run(["-interval=500ms"])).err, /interval must be at least 1s/);
    assert.match((await run(["-capture=nope"])).err, /target not found: nope/);
    mkdirSync(join(root, "exists"));
    const r = await run([`-output=${join(root, "exists")}`]);
    assert.equal(r.code, 1);
    assert.match(r.err, /already exists/);
    const down = await run([`-output=${join(root, "down")}`], (async () => { throw new TypeError("fetch failed"); }) as typeof fetch);
    assert.equal(down.code, 1);
    assert.match(down.err, /error querying target agent/);
    assert.equal((await run(["extra"])).code, 1);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("scrubChunks: a secret split between chunks is hidden, and says whether it replaced anything", () => {
  const seen = { replaced: false };
  const out = [...scrubChunks(["log tok", "-12345 and", ' {"t":"a\\"b', 'cd"}'], ["tok-12345", 'a"bcd'], seen)].join("");
  assert.equal(out, 'log hidden and {"t":"hidden"}');
  assert.equal(seen.replaced, true);
  const none = { replaced: false };
  assert.equal([...scrubChunks(["nothing", " here"], ["tok-12345"], none)].join(""), "nothing here");
  assert.equal(none.replaced, false);
});
