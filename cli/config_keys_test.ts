import assert from "node:assert/strict";
import { test } from "node:test";
import { keyCounts } from "../core/config/mod.ts";
import { runCli } from "./run.ts";
import { testIo } from "./_testing.ts";

test("config keys: the whole table, or one status, as text or JSON", async () => {
  let io = testIo();
  assert.equal(await runCli(["config", "keys"], io), 0);
  const c = keyCounts();
  assert.match(io.stdoutText, /^Key\s+Status\s+Notes\n/);
  assert.match(io.stdoutText, /\nacl\.enabled\s+implemented\n/);
  assert.match(io.stdoutText, /\nauto_reload_config\s+planned\s+reloading when config files change is not implemented yet; send SIGHUP or run `cairn reload`\n/);
  assert.match(io.stdoutText, /\nnode_name\s+implemented\n/);
  assert.match(io.stdoutText, /\nconnect\.enabled\s+ignored\s+the service mesh/);
  assert.match(io.stdoutText, /\nacl_replication_token\s+implemented\s+also turns token replication on, as in Consul; deprecated by Consul: use acl\.tokens\.replication\n/);
  assert.ok(io.stdoutText.endsWith(`\n${c.total} keys: ${c.implemented} implemented, ${c.planned} planned, ${c.ignored} ignored\n`));

  io = testIo();
  assert.equal(await runCli(["config", "keys", "-status=ignored", "-format=json"], io), 0);
  const rows = JSON.parse(io.stdoutText) as { Key: string; Status: string }[];
  assert.equal(rows.length, c.ignored);
  assert.ok(rows.every((r) => r.Status === "ignored"));
  assert.ok(rows.some((r) => r.Key === "service.connect"));

  io = testIo();
  assert.equal(await runCli(["config", "keys", "-status=maybe"], io), 1);
  assert.match(io.stderrText, /Invalid -status "maybe"/);
});
