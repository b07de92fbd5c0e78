// End-to-end: the python-consul client (Debian package python3-consul, which
// lives in /usr/bin/python3, not in pyenv's python) against `dist/cairn agent
// -dev`. The Python script in python/kv_compat.py does the checks; this test
// starts the agent on a free port, runs the script and fails when it fails.
//
// CAIRN_E2E_HTTP_ADDR=127.0.0.1:8500 runs the script against an agent that is
// already running instead of starting one.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { devAgentAt, root, run, type AgentTarget } from "./harness.ts";

const python = "/usr/bin/python3";
const script = join(root, "scripts/e2e/python/kv_compat.py");

let target: AgentTarget;
before(async () => {
  target = await devAgentAt(process.env.CAIRN_E2E_HTTP_ADDR);
});

test("python-consul: put/get/recurse/keys/cas/delete, binary values, blocking get, txn", async () => {
  assert.ok(existsSync(python), `${python} is missing: install the Debian packages python3 and python3-consul`);
  const probe = await run(python, ["-c", "import consul"], { timeoutMs: 10_000 });
  assert.equal(probe.code, 0, `python3-consul is not importable by ${python} (apt-get install python3-consul):\n${probe.stdout}${probe.stderr}`);
  const r = await run(python, [script, target.host, String(target.port)], { timeoutMs: 90_000 });
  const agentOutput = target.agent ? `\n--- agent output ---\n${target.agent.proc.output().slice(-4000)}` : "";
  assert.equal(r.code, 0, `python-consul checks failed (exit ${r.code}):\n${r.stdout}${r.stderr}${agentOutput}`);
  assert.match(r.stdout + r.stderr, /all python-consul checks passed/);
});
