// End-to-end: the built dist/cairn as a real process — version/help, the dev
// agent's KV API driven by the kv commands, and bad input at the edges.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cairnBin, run, startDevAgent, tempDir, waitFor, type DevAgent } from "./harness.ts";

describe("dist/cairn without an agent", () => {
  test("version prints the version, -format=json is JSON", async () => {
    const plain = await run(cairnBin, ["version"]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^cairn v\d+\.\d+\.\d+/);
    const json = await run(cairnBin, ["version", "-format=json"]);
    assert.equal(json.code, 0, json.stderr);
    assert.match(JSON.parse(json.stdout).Version, /^\d+\.\d+\.\d+/);
  });

  test("--help lists commands; unknown command prints usage and exits 1", async () => {
    const help = await run(cairnBin, ["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout + help.stderr, /kv/);
    const bad = await run(cairnBin, ["frobnicate"]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Usage|usage/);
  });

  test("kv get -h shows the command's help and exits 0", async () => {
    const r = await run(cairnBin, ["kv", "get", "-h"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout + r.stderr, /-recurse/);
  });

  test("a bad flag is named and exits 1", async () => {
    const r = await run(cairnBin, ["kv", "get", "-no-such-flag", "x"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /no-such-flag/);
  });

  test("an unparsable config file stops the agent, naming file and line", async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "bad.json");
      writeFileSync(file, '{\n  "node_name": "x",\n  "ports": { "http": }\n}\n');
      const r = await run(cairnBin, ["agent", "-dev", `-config-file=${file}`], { timeoutMs: 15_000 });
      assert.equal(r.code, 1);
      const out = r.stdout + r.stderr;
      assert.ok(out.includes(file), out);
      assert.match(out, /line 3/);
    } finally {
      dir.remove();
    }
  });

  test("a server agent without -data-dir refuses to start and names the flag", async () => {
    const r = await run(cairnBin, ["agent", "-server", "-bootstrap-expect=1", "-http-port=0"], { timeoutMs: 15_000 });
    assert.equal(r.code, 1);
    assert.match(r.stdout + r.stderr, /data[-_]dir/);
  });
});

describe("dist/cairn kv against a dev agent", () => {
  let agent: DevAgent;
  let env: Record<string, string>;
  const cairn = (args: string[], input?: string) => run(cairnBin, args, { env, input });

  before(async () => {
    agent = await startDevAgent();
    env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.httpPort}` };
  });
  after(async () => {
    await agent?.stop();
  });

  test("put, get, recurse, keys, detailed, delete", async () => {
    let r = await cairn(["kv", "put", "tour/a", "1"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "Success! Data written to: tour/a");
    await cairn(["kv", "put", "tour/b/c", "2"]);
    await cairn(["kv", "put", "-flags=42", "tour/d", "x y"]);

    r = await cairn(["kv", "get", "tour/a"]);
    assert.equal(r.stdout, "1\n");
    r = await cairn(["kv", "get", "-recurse", "tour/"]);
    assert.equal(r.stdout, "tour/a:1\ntour/b/c:2\ntour/d:x y\n");
    r = await cairn(["kv", "get", "-keys", "tour/"]);
    assert.equal(r.stdout, "tour/a\ntour/b/\ntour/d\n");
    r = await cairn(["kv", "get", "-detailed", "tour/d"]);
    assert.match(r.stdout, /Flags\s+42/);
    assert.match(r.stdout, /Value\s+x y/);

    r = await cairn(["kv", "get", "tour/missing"]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr.trim(), "Error! No key exists at: tour/missing");

    r = await cairn(["kv", "delete", "-recurse", "tour/b/"]);
    assert.equal(r.code, 0, r.stderr);
    r = await cairn(["kv", "get", "tour/b/c"]);
    assert.equal(r.code, 1);
  });

  test("the -http-addr flag and env fallbacks reach the agent", async () => {
    const r = await run(cairnBin, ["kv", "put", `-http-addr=http://127.0.0.1:${agent.httpPort}`, "flag/addr", "ok"], { env: { CONSUL_HTTP_ADDR: "127.0.0.1:1" } });
    assert.equal(r.code, 0, r.stderr);
    const r2 = await run(cairnBin, ["kv", "get", "flag/addr"], { env: { CAIRN_HTTP_ADDR: `127.0.0.1:${agent.httpPort}` } });
    assert.equal(r2.stdout, "ok\n");
  });

  test("cas: -modify-index=0 writes once, then fails with exit 1", async () => {
    let r = await cairn(["kv", "put", "-cas", "-modify-index=0", "cas/k", "first"]);
    assert.equal(r.code, 0, r.stderr);
    r = await cairn(["kv", "put", "-cas", "-modify-index=0", "cas/k", "second"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /CAS failed/);
    assert.equal((await cairn(["kv", "get", "cas/k"])).stdout, "first\n");
  });

  test("values from stdin, @file and base64; binary survives", async () => {
    let r = await cairn(["kv", "put", "in/stdin", "-"], "from stdin");
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await cairn(["kv", "get", "in/stdin"])).stdout, "from stdin\n");
    const dir = tempDir();
    try {
      const f = join(dir.path, "v.txt");
      writeFileSync(f, "from file");
      r = await cairn(["kv", "put", "in/file", `@${f}`]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal((await cairn(["kv", "get", "in/file"])).stdout, "from file\n");
    } finally {
      dir.remove();
    }
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    r = await cairn(["kv", "put", "-base64", "in/bin", all.toString("base64")]);
    assert.equal(r.code, 0, r.stderr);
    r = await cairn(["kv", "get", "-base64", "in/bin"]);
    assert.equal(r.stdout.trim(), all.toString("base64"));
  });

  test("export then import round-trips; a malformed import changes nothing", async () => {
    await cairn(["kv", "put", "exp/x", "1"]);
    await cairn(["kv", "put", "-flags=7", "exp/y", "2"]);
    const exported = await cairn(["kv", "export", "exp/"]);
    assert.equal(exported.code, 0, exported.stderr);
    const entries = JSON.parse(exported.stdout) as Array<{ key: string; flags: number; value: string }>;
    assert.deepEqual(entries.map((e) => e.key), ["exp/x", "exp/y"]);
    assert.equal(entries[1]!.flags, 7);

    await cairn(["kv", "delete", "-recurse", "exp/"]);
    let r = await cairn(["kv", "import", "-"], exported.stdout);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await cairn(["kv", "get", "exp/y"])).stdout, "2\n");

    const broken = JSON.stringify([{ key: "imp/ok", flags: 0, value: "b2s=" }, { key: "imp/bad", flags: 0, value: 17 }]);
    r = await cairn(["kv", "import", "-"], broken);
    assert.equal(r.code, 1);
    assert.equal((await cairn(["kv", "get", "imp/ok"])).code, 1, "a failed import must write nothing");
  });

  test("a uint64 flag above 2^53 (Terraform's lock flag) stays exact through put, get -detailed, export and import", async () => {
    const flag = "3304740253564472344";
    let r = await cairn(["kv", "put", `-flags=${flag}`, "u64/lock", "held"]);
    assert.equal(r.code, 0, r.stderr);
    r = await cairn(["kv", "get", "-detailed", "u64/lock"]);
    assert.match(r.stdout, new RegExp(`^Flags +${flag}$`, "m"));
    const exported = await cairn(["kv", "export", "u64/"]);
    assert.match(exported.stdout, new RegExp(`"flags": ${flag},`));
    await cairn(["kv", "delete", "-recurse", "u64/"]);
    r = await cairn(["kv", "import", "-"], exported.stdout);
    assert.equal(r.code, 0, r.stderr);
    const raw = await (await fetch(`${agent.http}/v1/kv/u64/lock`)).text();
    assert.match(raw, new RegExp(`"Flags":${flag}[,}]`));
    r = await cairn(["kv", "put", "-flags=18446744073709551616", "u64/over", "x"]);
    assert.equal(r.code, 1, "2^64 is not a uint64");
  });

  test("HTTP: oversized value → 413, nothing stored; X-Consul-Index on 404", async () => {
    const big = new Uint8Array(512 * 1024 + 1);
    let res = await fetch(`${agent.http}/v1/kv/big`, { method: "PUT", body: big });
    assert.equal(res.status, 413);
    await res.text();
    res = await fetch(`${agent.http}/v1/kv/big`);
    assert.equal(res.status, 404);
    assert.ok(Number(res.headers.get("x-consul-index")) > 0);
    res = await fetch(`${agent.http}/v1/kv/ok-size`, { method: "PUT", body: new Uint8Array(512 * 1024) });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "true");
  });

  test("a second agent on the same HTTP port says which port is taken", async () => {
    const { proc: second } = await startDevAgent([], { use: { http: agent.httpPort }, ready: false });
    const code = await Promise.race([second.exited, new Promise((r) => setTimeout(() => r("still running"), 15_000))]);
    if (code === "still running") await second.kill();
    assert.equal(code, 1, second.output());
    assert.match(second.output(), new RegExp(`${agent.httpPort}.*in use|in use.*${agent.httpPort}`));
  });

  test("SIGINT shuts the agent down gracefully with exit 0", async () => {
    const other = await startDevAgent();
    other.proc.child.kill("SIGINT");
    const code = await waitFor(() => other.proc.child.exitCode !== null ? String(other.proc.child.exitCode) : undefined, { timeoutMs: 10_000, what: "agent exit" });
    assert.equal(code, "0", other.proc.output());
    assert.match(other.proc.output(), /Gracefully shutting down/);
  });
});
