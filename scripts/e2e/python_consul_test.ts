// End-to-end: the python-consul client (Debian package python3-consul, which
// lives in /usr/bin/python3, not in pyenv's python) against `dist/cairn agent
// -dev`. The Python script in python/kv_compat.py does the checks; this test
// starts the agent on a free port, runs the script and fails when it fails.
//
// CAIRN_E2E_HTTP_ADDR=127.0.0.1:8500 runs the script against an agent that is
// already running instead of starting one.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { freePort } from "./harness.ts";

const root = resolve(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "../..");
const cairn = join(root, "dist/cairn");
const python = "/usr/bin/python3";
const script = join(root, "scripts/e2e/python/kv_compat.py");

let agent: ChildProcess | undefined;
let agentOutput = "";
let host = "127.0.0.1";
let port = 0;

async function leader(): Promise<string | undefined> {
  try {
    const r = await fetch(`http://${host}:${port}/v1/status/leader`, { signal: AbortSignal.timeout(2_000) });
    if (!r.ok) return undefined;
    const v = (await r.json()) as unknown;
    return typeof v === "string" && v !== "" ? v : undefined;
  } catch {
    return undefined;
  }
}

function run(cmd: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun) => {
    const child = spawn(cmd, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => { output += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { output += d.toString(); });
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs} ms]`;
      if (child.pid !== undefined) process.kill(child.pid, "SIGKILL");
    }, timeoutMs);
    child.on("error", (err) => { output += `\n${err.message}`; });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolveRun({ code, output });
    });
  });
}

before(async () => {
  const given = process.env.CAIRN_E2E_HTTP_ADDR;
  if (given) {
    const at = given.lastIndexOf(":");
    host = given.slice(0, at);
    port = Number(given.slice(at + 1));
    return;
  }
  assert.ok(existsSync(cairn), `${cairn} is missing: run \`npm run build\` first`);
  port = await freePort();
  agent = spawn(cairn, ["agent", "-dev", `-http-port=${port}`], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  agent.stdout?.on("data", (d: Buffer) => { agentOutput += d.toString(); });
  agent.stderr?.on("data", (d: Buffer) => { agentOutput += d.toString(); });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (agent.exitCode !== null) break;
    if (await leader()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`cairn agent -dev -http-port=${port} did not elect a leader within 30 s (exit code ${agent.exitCode}):\n${agentOutput}`);
});

after(() => {
  if (agent?.pid !== undefined && agent.exitCode === null) process.kill(agent.pid, "SIGKILL");
});

test("python-consul: put/get/recurse/keys/cas/delete, binary values, blocking get, txn", async () => {
  assert.ok(existsSync(python), `${python} is missing: install the Debian packages python3 and python3-consul`);
  const probe = await run(python, ["-c", "import consul"], 10_000);
  assert.equal(probe.code, 0, `python3-consul is not importable by ${python} (apt-get install python3-consul):\n${probe.output}`);
  const r = await run(python, [script, host, String(port)], 90_000);
  assert.equal(r.code, 0, `python-consul checks failed (exit ${r.code}):\n${r.output}\n--- agent output ---\n${agentOutput.slice(-4000)}`);
  assert.match(r.output, /all python-consul checks passed/);
});
