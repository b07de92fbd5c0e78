// End-to-end: python-consul (Debian python3-consul 0.7.1 in /usr/bin/python3,
// not pyenv's python) against `dist/cairn agent -dev` for the catalog,
// health and session APIs: the leader-reconciled serfHealth node, service
// registration with a TTL check and check pass, catalog and health queries,
// a blocking health query woken from another thread, sessions and KV locks.
// The checks live in python/catalog_compat.py.
//
// CAIRN_E2E_HTTP_ADDR=127.0.0.1:8500 runs the script against a running agent.
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { devAgentAt, root, run, type AgentTarget } from "./harness.ts";

const python = "/usr/bin/python3";
const script = join(root, "scripts/e2e/python/catalog_compat.py");

let target: AgentTarget;
before(async () => {
  target = await devAgentAt(process.env.CAIRN_E2E_HTTP_ADDR);
});

test("python-consul: catalog, health, sessions and locks against cairn", { timeout: 90_000 }, async () => {
  assert.ok(existsSync(python), `${python} is missing (Debian python3-consul lives there)`);
  const r = await run(python, [script, target.host, String(target.port)], { timeoutMs: 60_000 });
  const agentOutput = target.agent ? `\n--- agent output (tail) ---\n${target.agent.proc.output().slice(-4000)}` : "";
  assert.equal(r.code, 0, `catalog_compat.py failed:\n${r.stdout}${r.stderr}${agentOutput}`);
  assert.match(r.stdout, /\nok\n?$/);
});
