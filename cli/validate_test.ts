import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runCli } from "./run.ts";
import { testIo } from "./_testing.ts";

const corpus = join(import.meta.dirname, "../core/config/testdata/consul_corpus");

test("validate: a Consul server directory in HCL is valid, with a warning per key cairn does not honour", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-validate-"));
  try {
    for (const f of ["server.hcl", "web.hcl", "services.hcl", "checks.hcl", "watches.hcl", "ui.hcl"]) cpSync(join(corpus, f), join(dir, f));
    const io = testIo();
    assert.equal(await runCli(["validate", dir], io), 0, io.stderrText);
    assert.equal(io.stdoutText, "Configuration is valid!\n");
    const warnings = io.stderrText.trimEnd().split("\n");
    assert.ok(!warnings.some((w) => w.includes('"acl')), `acl {} is implemented: no warning\n${io.stderrText}`);
    assert.ok(!warnings.some((w) => w.includes('"watches')), "watches are implemented: no warning");
    // The web UI is served; its metrics settings are not.
    assert.ok(!warnings.some((w) => w.includes('"ui_config"') || w.includes('"ui_config.enabled"')), io.stderrText);
    assert.ok(warnings.includes(`Config key "ui_config.metrics_provider" from "${join(dir, "ui.hcl")}" line 3 has no effect in cairn: cairn's web UI shows no metrics graphs and no dashboard links`), io.stderrText);
    assert.equal(new Set(warnings).size, warnings.length, "one warning per key");

    const quiet = testIo();
    assert.equal(await runCli(["validate", "-quiet", dir], quiet), 0);
    assert.equal(quiet.stdoutText + quiet.stderrText, "");

    writeFileSync(join(dir, "typo.hcl"), "ports {\n  htp = 1\n}\n");
    const bad = testIo();
    assert.equal(await runCli(["validate", dir], bad), 1);
    assert.match(bad.stderrText, /^Config validation failed: Unknown configuration key "ports\.htp" in ".*typo\.hcl" at line 2: did you mean "http"\?/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});

test("validate: -config-format reads every file in that format", async () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-validate-"));
  try {
    writeFileSync(join(dir, "agent.conf"), 'data_dir = "/tmp/x"\nnode_name = "n"\n');
    let io = testIo();
    assert.equal(await runCli(["validate", join(dir, "agent.conf")], io), 1, "skipped without -config-format, so data_dir is missing");
    writeFileSync(join(dir, "base.json"), '{"data_dir": "/tmp/x"}');
    io = testIo();
    assert.equal(await runCli(["validate", join(dir, "base.json"), join(dir, "agent.conf")], io), 0, io.stderrText);
    assert.match(io.stderrText, /Skipping ".*agent\.conf": config files must end in \.hcl, \.json, \.yaml or \.yml/, "named in a warning, as Consul does");
    io = testIo();
    assert.equal(await runCli(["validate", "-config-format=hcl", join(dir, "agent.conf")], io), 0, io.stderrText);
    io = testIo();
    assert.equal(await runCli(["validate", "-config-format=ini", dir], io), 1);
    assert.match(io.stderrText, /Invalid -config-format "ini"/);
  } finally {
    rmSync(dir, { recursive: true });
  }
});
