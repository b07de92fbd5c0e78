// The terraform driver's discovery and version check, against the fake
// terraform the e2e tests use (scripts/e2e/fake_terraform.cjs).
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseSyncConfig } from "./config.ts";
import { findTerraform, parseSimpleTfvars, TerraformDriver } from "./terraform_driver_node.ts";
import { generateRootModule, hclValue } from "./tfgen.ts";

const fake = resolve(import.meta.dirname ?? ".", "../../scripts/e2e/fake_terraform.cjs");

function withBin(name: string, fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "cairn-tf-"));
  copyFileSync(fake, join(dir, name));
  chmodSync(join(dir, name), 0o755);
  return fn(dir).finally(() => rmSync(dir, { recursive: true, force: true }));
}

const cfgText = (path: string) => `driver "terraform" {\n  path = "${path}"\n}\ntask {\n  name = "t"\n  module = "./m"\n  condition "services" { names = ["web"] }\n}\n`;

test("terraform driver: finds terraform or tofu, never downloads, warns outside the tested range", async () => {
  assert.deepEqual(findTerraform("", "/nonexistent"), { error: 'No terraform or tofu on PATH: install one, or set driver "terraform" { path = "…" }; cairn never downloads Terraform' });
  await withBin("tofu", async (dir) => {
    assert.equal(findTerraform("", `/nonexistent:${dir}`), join(dir, "tofu"));
    assert.equal(findTerraform(dir, undefined), join(dir, "tofu"));
    const cfg = parseSyncConfig([{ file: "s.hcl", text: cfgText(dir) }]);
    const ok = new TerraformDriver(cfg, { baseDir: dir, secrets: [], env: { PATH: process.env.PATH, FAKE_TERRAFORM_VERSION: "1.6.6" } });
    await ok.init();
    assert.equal(ok.version, "1.6.6");
    assert.deepEqual(ok.warnings, []);
    const newer = new TerraformDriver(cfg, { baseDir: dir, secrets: [], env: { PATH: process.env.PATH, FAKE_TERRAFORM_VERSION: "1.12.1" } });
    await newer.init();
    assert.match(newer.warnings[0]!, /version 1\.12\.1, outside the tested range/);
  });
  assert.throws(() => new TerraformDriver(parseSyncConfig([{ file: "s.hcl", text: cfgText("/nonexistent/tf") }]), { baseDir: "/", secrets: [], env: {} }), /neither an executable nor a directory/);
});

test("tfgen: terraform.tfvars renders services as CTS does; providers are a secret file", () => {
  const cfg = parseSyncConfig([{ file: "s.hcl", text: 'terraform_provider "local" {\n  token = "t0ps3cret"\n}\ntask {\n  name = "t"\n  module = "./m"\n  providers = ["local"]\n  condition "services" { names = ["web"] }\n}\n' }]);
  const svc = { id: "web-1", name: "web", kind: "", address: "10.0.0.1", port: 80, meta: {}, tags: ["a"], namespace: "", status: "passing", node: "n1", node_id: "x", node_address: "10.0.0.1", node_datacenter: "dc1", node_tagged_addresses: { lan: "10.0.0.1" }, node_meta: {}, cts_user_defined_meta: {} };
  const files = generateRootModule(cfg, cfg.tasks[0]!, { services: { "web-1.n1.dc1": svc } }, { backend: { consul: { path: "p" } }, variables: {} });
  const byName = Object.fromEntries(files.map((f) => [f.name, f]));
  assert.match(byName["terraform.tfvars"]!.text, /\nservices = \{\n {2}"web-1\.n1\.dc1" = \{\n {4}id = "web-1"\n/);
  assert.match(byName["terraform.tfvars"]!.text, /\n {4}tags = \["a"\]\n/);
  assert.match(byName["terraform.tfvars"]!.text, /\n {4}node_tagged_addresses = \{\n {6}lan = "10\.0\.0\.1"\n {4}\}\n/);
  assert.equal(byName["providers.tf"]!.secret, true);
  assert.match(byName["providers.tf"]!.text, /provider "local" \{\n {2}token = "t0ps3cret"\n\}/);
  assert.match(byName["main.tf"]!.text, /module "t" \{\n {2}source = "\.\/m"\n {2}services = var\.services\n {2}providers = \{\n {4}local = local\n {2}\}\n\}/);
  assert.equal(byName["terraform.tfvars"]!.secret, false);
  assert.equal(hclValue("${x}"), '"$${x}"', "template sequences are escaped");
  assert.deepEqual(parseSimpleTfvars('a = "x"\n# c\nb = 3\n', "v.tfvars"), { a: "x", b: 3 });
  assert.throws(() => parseSimpleTfvars("a = x\n", "v.tfvars"), /v\.tfvars:1: cannot read the value of "a"/);
});
