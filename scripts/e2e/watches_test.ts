// End-to-end: `watches` in an agent's config file, run by the built binary.
// A script handler (args, JSON on stdin, CONSUL_INDEX) and an http handler
// (to a node:http server here) each run once at start, once per change of
// what they watch and not for a write elsewhere; a reload that removes the
// script watch stops it and leaves the unchanged http watch as it was.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { cairn, startDevAgent, tempDir, waitFor, type DevAgent } from "./harness.ts";

const dir = tempDir("cairn-e2e-watches-");
const out = join(dir.path, "script.log");
const configFile = join(dir.path, "watches.json");
const hooks: Array<{ method?: string; headers: IncomingHttpHeaders; body: string }> = [];
const server = createServer((req, res) => {
  let body = "";
  req.on("data", (c: Buffer) => (body += c.toString()));
  req.on("end", () => {
    hooks.push({ method: req.method, headers: req.headers, body });
    res.end("ok");
  });
});
let agent: DevAgent;

function watches(withScript: boolean, port: number): string {
  const script = {
    type: "key",
    key: "app/cfg",
    // One line per run: the index, then the JSON from stdin (it ends with a newline).
    args: ["/bin/sh", "-c", `printf '%s ' "$CONSUL_INDEX" >> '${out}'; cat >> '${out}'`],
  };
  const http = {
    type: "keyprefix",
    prefix: "hooks/",
    handler_type: "http",
    http_handler_config: { path: `http://127.0.0.1:${port}/hook`, method: "PUT", header: { "X-Team": ["ops"] }, timeout: "5s" },
  };
  return JSON.stringify({ watches: withScript ? [script, http] : [http] }, null, 2);
}

function scriptRuns(): Array<{ index: string; data: unknown }> {
  if (!existsSync(out)) return [];
  return readFileSync(out, "utf8").split("\n").filter((l) => l !== "").map((l) => {
    const i = l.indexOf(" ");
    return { index: l.slice(0, i), data: JSON.parse(l.slice(i + 1)) };
  });
}

async function put(key: string, value: string): Promise<void> {
  const r = await fetch(`${agent.http}/v1/kv/${key}`, { method: "PUT", body: value });
  assert.equal(r.status, 200);
}

before(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  writeFileSync(configFile, watches(true, port));
  agent = await startDevAgent([`-config-file=${configFile}`]);
});

after(async () => {
  await agent?.stop();
  server.closeAllConnections();
  server.close();
  dir.remove();
});

test("watches: each handler runs once at start, once per change, not for other writes; reload removes one", async () => {
  // At start: the script sees the missing key (null), the http handler the empty prefix.
  await waitFor(() => scriptRuns().length === 1 && hooks.length === 1, { what: "the first run of both watches" });
  assert.equal(scriptRuns()[0]!.data, null);
  assert.equal(hooks[0]!.method, "PUT");
  assert.equal(hooks[0]!.headers["x-team"], "ops");
  assert.equal(hooks[0]!.headers["content-type"], "application/json");
  assert.deepEqual(JSON.parse(hooks[0]!.body), []);

  // A change of the watched key: one script run, with the index of the write.
  await put("app/cfg", "v1");
  await waitFor(() => scriptRuns().length === 2, { what: "the script run for app/cfg=v1" });
  const run = scriptRuns()[1]!;
  const pair = run.data as { Key: string; Value: string; ModifyIndex: number };
  assert.equal(pair.Key, "app/cfg");
  assert.equal(Buffer.from(pair.Value, "base64").toString(), "v1");
  assert.equal(run.index, String(pair.ModifyIndex), "CONSUL_INDEX is the index of the change");

  // A write elsewhere moves the KV index but changes neither view; then a
  // change under hooks/ is the marker that both watches have seen it.
  await put("other/x", "1");
  await put("hooks/a", "1");
  await waitFor(() => hooks.length === 2, { what: "the http run for hooks/a" });
  const hook = hooks[1]!;
  assert.deepEqual((JSON.parse(hook.body) as Array<{ Key: string }>).map((p) => p.Key), ["hooks/a"]);
  assert.equal(hook.headers["x-consul-index"], String((JSON.parse(hook.body) as Array<{ ModifyIndex: number }>)[0]!.ModifyIndex));
  assert.equal(scriptRuns().length, 2, "no script run for a write to another key");
  assert.equal(hooks.length, 2, "no http run for a write to app/cfg or other/x");

  // Reload without the script watch: it stops; the unchanged http watch keeps going without a new run.
  writeFileSync(configFile, watches(false, (server.address() as { port: number }).port));
  const reload = await cairn(["reload", `-http-addr=${agent.httpAddr}`]);
  assert.equal(reload.code, 0, reload.stderr);
  await put("app/cfg", "v2");
  await put("hooks/b", "1");
  await waitFor(() => hooks.length === 3, { what: "the http run for hooks/b" });
  assert.deepEqual((JSON.parse(hooks[2]!.body) as Array<{ Key: string }>).map((p) => p.Key), ["hooks/a", "hooks/b"]);
  assert.equal(scriptRuns().length, 2, "the removed script watch does not run");
  assert.equal(hooks.length, 3, "the http watch ran once, for hooks/b only");
});
