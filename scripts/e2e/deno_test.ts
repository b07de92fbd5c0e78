// The same sources run under Deno 2: a dev agent and the CLI, both on Deno,
// do a KV round trip.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { root, run, startDevAgent, type DevAgent } from "./harness.ts";

const deno = join(root, "node_modules/.bin/deno");
let agent: DevAgent;

before(async () => {
  agent = await startDevAgent([], { runtime: "deno" });
});
after(async () => {
  await agent?.stop();
});

test("deno: CLI and dev agent round-trip a key", async () => {
  const env = { CONSUL_HTTP_ADDR: `127.0.0.1:${agent.httpPort}` };
  const cli = (args: string[]) => run(deno, ["run", "--allow-all", "cli/main.ts", ...args], { env, timeoutMs: 60_000 });
  const put = await cli(["kv", "put", "deno/key", "hello from deno"]);
  assert.equal(put.code, 0, put.stderr);
  const get = await cli(["kv", "get", "deno/key"]);
  assert.equal(get.code, 0, get.stderr);
  assert.equal(get.stdout, "hello from deno\n");
  const missing = await cli(["kv", "get", "deno/none"]);
  assert.equal(missing.code, 1);
});
