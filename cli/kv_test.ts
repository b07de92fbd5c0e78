import assert from "node:assert/strict";
import { test } from "node:test";
import { runCli } from "./run.ts";
import { FakeAgent, testIo } from "./_testing.ts";
import type { TestIo } from "./_testing.ts";

async function run(agent: FakeAgent, args: string[], opts: Parameters<typeof testIo>[0] = {}): Promise<{ code: number; io: TestIo }> {
  const io = testIo({ agent, ...opts });
  const code = await runCli(args, io);
  return { code, io };
}

test("kv put: argument, stdin, @file, -base64, flags", async () => {
  const agent = new FakeAgent();
  let r = await run(agent, ["kv", "put", "config/max", "5"]);
  assert.equal(r.code, 0);
  assert.equal(r.io.stdoutText, "Success! Data written to: config/max\n");
  assert.equal(agent.getText("config/max"), "5");

  r = await run(agent, ["kv", "put", "from/stdin", "-"], { stdin: "piped" });
  assert.equal(agent.getText("from/stdin"), "piped");
  r = await run(agent, ["kv", "put", "from/file", "@lic.txt"], { files: { "lic.txt": "license" } });
  assert.equal(agent.getText("from/file"), "license");
  r = await run(agent, ["kv", "put", "neg", "-5"]);
  assert.equal(r.code, 0);
  assert.equal(agent.getText("neg"), "-5");
  r = await run(agent, ["kv", "put", "dashy", "-x"]);
  assert.equal(agent.getText("dashy"), "-x");
  r = await run(agent, ["kv", "put", "-base64", "b64", "aGVsbG8="]);
  assert.equal(agent.getText("b64"), "hello");
  r = await run(agent, ["kv", "put", "-flags=42", "/lead", ""]);
  assert.equal(r.io.stdoutText, "Success! Data written to: lead\n");
  assert.equal(agent.kv.get("lead")?.flags, 42);
  assert.equal(agent.getText("lead"), "");

  r = await run(agent, ["kv", "put", "x", "@missing"]);
  assert.equal(r.code, 1);
  assert.match(r.io.stderrText, /^Error! Failed to read file: /);
  r = await run(agent, ["kv", "put", "-base64", "x", "!!"]);
  assert.equal(r.code, 1);
  assert.match(r.io.stderrText, /Cannot base 64 decode data/);
  r = await run(agent, ["kv", "put"]);
  assert.equal(r.io.stderrText, "Error! Missing KEY argument\n");
  r = await run(agent, ["kv", "put", "a", "b", "c"]);
  assert.match(r.io.stderrText, /Too many arguments \(expected 1 or 2, got 3\)/);
});

test("kv put: CAS and locks", async () => {
  const agent = new FakeAgent();
  agent.set("k", "v1");
  const index = agent.kv.get("k")!.modifyIndex;
  let r = await run(agent, ["kv", "put", "-cas", `-modify-index=${index + 100}`, "k", "v2"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Error! Did not write to k: CAS failed\n");
  assert.equal(agent.getText("k"), "v1");
  r = await run(agent, ["kv", "put", "-cas", `-modify-index=${index}`, "k", "v2"]);
  assert.equal(r.code, 0);
  assert.equal(r.io.stdoutText, "Success! Data written to: k\n");
  r = await run(agent, ["kv", "put", "-cas", "k", "v3"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Must specify -modify-index with -cas!\n");
  r = await run(agent, ["kv", "put", "-cas", "-modify-index=0", "fresh", "v"]);
  assert.equal(r.code, 0, "cas 0 creates a missing key");
  r = await run(agent, ["kv", "put", "-acquire", "lock", "x"]);
  assert.equal(r.io.stderrText, "Error! Missing -session (required with -acquire and -release)\n");
  r = await run(agent, ["kv", "put", "-acquire", "-session=s1", "lock", "x"]);
  assert.equal(r.io.stdoutText, "Success! Lock acquired on: lock\n");
  r = await run(agent, ["kv", "put", "-acquire", "-session=s2", "lock", "x"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Error! Did not acquire lock\n");
  r = await run(agent, ["kv", "put", "-release", "-session=s1", "lock", "x"]);
  assert.equal(r.io.stdoutText, "Success! Lock released on: lock\n");
});

test("kv get: value, missing key, -recurse, -keys, -detailed, -base64", async () => {
  const agent = new FakeAgent();
  agent.set("app/a", "1");
  agent.set("app/b/c", "2", 7);
  agent.set("apple", "3");
  let r = await run(agent, ["kv", "get", "app/a"]);
  assert.equal(r.code, 0);
  assert.equal(r.io.stdoutText, "1\n");
  r = await run(agent, ["kv", "get", "/app/a"]);
  assert.equal(r.io.stdoutText, "1\n");
  r = await run(agent, ["kv", "get", "nope"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Error! No key exists at: nope\n");
  r = await run(agent, ["kv", "get"]);
  assert.equal(r.io.stderrText, "Error! Missing KEY argument\n");
  r = await run(agent, ["kv", "get", "-recurse", "app"]);
  assert.equal(r.io.stdoutText, "app/a:1\napp/b/c:2\napple:3\n");
  r = await run(agent, ["kv", "get", "-recurse", "-base64", "app/"]);
  assert.equal(r.io.stdoutText, "app/a:MQ==\napp/b/c:Mg==\n");
  r = await run(agent, ["kv", "get", "-keys", "app/"]);
  assert.equal(r.io.stdoutText, "app/a\napp/b/\n");
  r = await run(agent, ["kv", "get", "-keys", "-separator=", "app/"]);
  assert.equal(r.io.stdoutText, "app/a\napp/b/c\n");
  r = await run(agent, ["kv", "get", "-detailed", "app/b/c"]);
  const e = agent.kv.get("app/b/c")!;
  assert.equal(
    r.io.stdoutText,
    [
      `CreateIndex      ${e.createIndex}`,
      "Flags            7",
      "Key              app/b/c",
      "LockIndex        0",
      `ModifyIndex      ${e.modifyIndex}`,
      "Session          -",
      "Value            2",
      "",
    ].join("\n"),
  );
  r = await run(agent, ["kv", "get", "-recurse", "-detailed", "app/"]);
  assert.match(r.io.stdoutText, /Value            1\n\nCreateIndex/);
  assert.ok(r.io.stdoutText.endsWith("Value            2\n"));
  r = await run(agent, ["kv", "get", "a", "b"]);
  assert.equal(r.io.stderrText, "Too many arguments (expected 1, got 2)\n");
});

test("kv get: -http-addr, env address and token, -stale, -datacenter", async () => {
  const agent = new FakeAgent();
  agent.set("k", "v");
  let r = await run(agent, ["kv", "get", "-stale", "-datacenter=dc2", "-token=t1", "k"]);
  let req = agent.requests.at(-1)!;
  assert.equal(req.token, "t1");
  assert.equal(req.params.get("dc"), "dc2");
  assert.equal(req.params.has("stale"), true);
  r = await run(agent, ["kv", "get", "k"], { env: { CONSUL_HTTP_TOKEN: "envtok", CONSUL_HTTP_ADDR: "10.0.0.1:8500" } });
  assert.equal(r.code, 0);
  req = agent.requests.at(-1)!;
  assert.equal(req.token, "envtok");
  // The fake answers any host; check the address the client used instead.
  const io = testIo({ env: { CAIRN_HTTP_ADDR: "http://10.9.9.9:1" } });
  const seen: string[] = [];
  io.fetch = async (input, init) => {
    seen.push(String(input instanceof Request ? input.url : input));
    return agent.fetch(input, init);
  };
  await runCli(["kv", "get", "k"], io);
  assert.match(seen[0]!, /^http:\/\/10\.9\.9\.9:1\/v1\/kv\/k/);
  await runCli(["kv", "get", "-http-addr=127.0.0.2:8500", "k"], io);
  assert.match(seen[1]!, /^http:\/\/127\.0\.0\.2:8500\//);

  agent.failWith = { status: 403, body: "Permission denied" };
  r = await run(agent, ["kv", "get", "k"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Error querying agent: Unexpected response code: 403 (Permission denied)\n");
});

test("kv delete: key, prefix, CAS", async () => {
  const agent = new FakeAgent();
  agent.set("a/1", "x");
  agent.set("a/2", "y");
  agent.set("b", "z");
  let r = await run(agent, ["kv", "delete", "b"]);
  assert.equal(r.io.stdoutText, "Success! Deleted key: b\n");
  assert.equal(agent.kv.has("b"), false);
  const idx = agent.kv.get("a/1")!.modifyIndex;
  r = await run(agent, ["kv", "delete", "-cas", `-modify-index=${idx + 50}`, "a/1"]);
  assert.equal(r.code, 1);
  assert.equal(r.io.stderrText, "Error! Did not delete key a/1: CAS failed\n");
  r = await run(agent, ["kv", "delete", "-cas", `-modify-index=${idx}`, "a/1"]);
  assert.equal(r.io.stdoutText, "Success! Deleted key: a/1\n");
  r = await run(agent, ["kv", "delete", "-cas", "-recurse", "-modify-index=1", "a/"]);
  assert.equal(r.io.stderrText, "Cannot purge recursively using CAS\n");
  r = await run(agent, ["kv", "delete", "-modify-index=1", "a/"]);
  assert.equal(r.io.stderrText, "Cannot specify -modify-index without -cas!\n");
  r = await run(agent, ["kv", "delete", "-recurse", "a/"]);
  assert.equal(r.io.stdoutText, "Success! Deleted keys with prefix: a/\n");
  assert.equal(agent.kv.size, 0);
  r = await run(agent, ["kv", "delete"]);
  assert.equal(r.io.stderrText, "Error! Missing KEY argument\n");
});

test("kv export then import round-trips through Consul's JSON", async () => {
  const src = new FakeAgent();
  src.set("svc/a", "alpha", 3);
  src.set("svc/b", new Uint8Array([0, 1, 254, 255]));
  src.set("svc/empty", "");
  src.set("other", "no");
  const exp = await run(src, ["kv", "export", "svc/"]);
  assert.equal(exp.code, 0);
  const parsed = JSON.parse(exp.io.stdoutText);
  assert.deepEqual(parsed, [
    { key: "svc/a", flags: 3, value: "YWxwaGE=" },
    { key: "svc/b", flags: 0, value: "AAH+/w==" },
    { key: "svc/empty", flags: 0, value: "" },
  ]);
  assert.match(exp.io.stdoutText, /^\[\n\t\{\n\t\t"key": "svc\/a",/);

  const dst = new FakeAgent();
  const imp = await run(dst, ["kv", "import", "-prefix=copy/", "-"], { stdin: exp.io.stdoutText });
  assert.equal(imp.code, 0, imp.io.stderrText);
  assert.equal(imp.io.stdoutText, "Imported: copy/svc/a\nImported: copy/svc/b\nImported: copy/svc/empty\n");
  assert.equal(dst.getText("copy/svc/a"), "alpha");
  assert.equal(dst.kv.get("copy/svc/a")?.flags, 3);
  assert.deepEqual(dst.kv.get("copy/svc/b")?.value, new Uint8Array([0, 1, 254, 255]));

  const fromFile = await run(new FakeAgent(), ["kv", "import", "@dump.json"], { files: { "dump.json": exp.io.stdoutText } });
  assert.equal(fromFile.code, 0);
  const inline = await run(new FakeAgent(), ["kv", "import", '[{"key":"k","flags":0,"value":"dg=="}]']);
  assert.equal(inline.io.stdoutText, "Imported: k\n");
});

test("kv import: a malformed file writes nothing", async () => {
  const cases: [string, RegExp][] = [
    ["not json", /^Cannot unmarshal data: /],
    ['{"key":"a"}', /expected a JSON list/],
    ['[{"key":"a","flags":0,"value":"YQ=="},{"key":"b","flags":0,"value":"%%%"}]', /Error base 64 decoding value for key b/],
    ['[{"key":"a","flags":0,"value":"YQ=="},{"flags":0,"value":"YQ=="}]', /Entry 1: "key" must be a non-empty string/],
    ['[{"key":"a","flags":-1,"value":"YQ=="}]', /"flags" must be an unsigned integer/],
  ];
  for (const [data, want] of cases) {
    const agent = new FakeAgent();
    const r = await run(agent, ["kv", "import", "-"], { stdin: data });
    assert.equal(r.code, 1, data);
    assert.match(r.io.stderrText, want, data);
    assert.equal(agent.kv.size, 0, `nothing written for ${data}`);
    assert.equal(agent.requests.length, 0, `no request sent for ${data}`);
  }
  const none = await run(new FakeAgent(), ["kv", "import"]);
  assert.equal(none.io.stderrText, "Error! Missing DATA argument\n");
});

test("kv import: large imports go in batches of at most 64 keys", async () => {
  const agent = new FakeAgent();
  const entries = Array.from({ length: 150 }, (_, i) => ({ key: `k/${String(i).padStart(3, "0")}`, flags: 0, value: "eA==" }));
  const r = await run(agent, ["kv", "import", "-"], { stdin: JSON.stringify(entries) });
  assert.equal(r.code, 0, r.io.stderrText);
  assert.equal(agent.kv.size, 150);
  const txns = agent.requests.filter((q) => q.path === "/v1/txn");
  assert.deepEqual(txns.map((t) => JSON.parse(t.body).length), [64, 64, 22]);
});
