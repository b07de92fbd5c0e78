import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError } from "../errors.ts";
import { parseSyncConfig, parseTaskDocument } from "./config.ts";
import { nextCronTime, parseCron } from "./cron.ts";

const hcl = `
log_level   = "debug"
port        = 8600
working_dir = "/tmp/sync"
buffer_period {
  min = "2s"
  max = "10s"
}
consul {
  address = "127.0.0.1:9500"
  token   = "secret"
}
driver "terraform" {
  path = "/opt/tf/terraform"
  backend "consul" {
    path = "cts/state"
  }
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
terraform_provider "local" {}
task {
  name        = "web-lb"
  description = "load balancer for web"
  module      = "./modules/lb"
  providers   = ["local"]
  condition "services" {
    names = ["web", "api"]
    cts_user_defined_meta = { team = "a" }
  }
  module_input "consul-kv" {
    path    = "lb/config"
    recurse = true
  }
  buffer_period {
    min = "1s"
  }
}
task {
  name   = "nightly"
  module = "./modules/n"
  enabled = false
  condition "schedule" {
    cron = "0 3 * * *"
  }
  module_input "services" {
    names = ["db"]
  }
}
`;

function parse(text: string, file = "sync.hcl", env = {}) {
  return parseSyncConfig([{ file, text }], env);
}

function errorOf(text: string, file = "sync.hcl"): ConfigError {
  try {
    parse(text, file);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err;
  }
  assert.fail("expected a ConfigError");
}

test("sync config: the CTS schema in HCL", () => {
  const c = parse(hcl);
  assert.equal(c.logLevel, "debug");
  assert.equal(c.port, 8600);
  assert.equal(c.workingDir, "/tmp/sync");
  assert.deepEqual(c.bufferPeriod, { enabled: true, minMs: 2000, maxMs: 10000 });
  assert.equal(c.consul.address, "127.0.0.1:9500");
  assert.equal(c.consul.token, "secret");
  assert.equal(c.driver.kind, "terraform");
  assert.equal(c.driver.terraform.path, "/opt/tf/terraform");
  assert.deepEqual(c.driver.terraform.backend, { consul: { path: "cts/state" } });
  assert.deepEqual(c.driver.terraform.requiredProviders, { local: { source: "hashicorp/local" } });
  assert.deepEqual(Object.keys(c.terraformProviders), ["local"]);
  assert.equal(c.tasks.length, 2);
  const [web, nightly] = c.tasks;
  assert.equal(web!.name, "web-lb");
  assert.deepEqual(web!.bufferPeriod, { enabled: true, minMs: 1000, maxMs: 4000 });
  assert.equal(web!.condition?.kind, "services");
  assert.deepEqual(web!.condition?.kind === "services" && web!.condition.ctsUserDefinedMeta, { team: "a" });
  assert.deepEqual(web!.moduleInputs, [{ kind: "consul-kv", path: "lb/config", recurse: true, datacenter: "", namespace: "" }]);
  assert.equal(web!.source, "sync.hcl:24");
  assert.equal(nightly!.enabled, false);
  assert.equal(nightly!.condition?.kind, "schedule");
});

test("sync config: JSON twin and defaults from CONSUL_* env", () => {
  const c = parse(JSON.stringify({ task: [{ name: "a", module: "m", condition: { services: { names: ["web"] } } }] }), "sync.json", {
    CONSUL_HTTP_ADDR: "10.0.0.1:8500",
    CONSUL_HTTP_TOKEN: "t",
  });
  assert.equal(c.port, 8558);
  assert.deepEqual(c.bufferPeriod, { enabled: true, minMs: 5000, maxMs: 20000 });
  assert.equal(c.consul.address, "10.0.0.1:8500");
  assert.equal(c.consul.token, "t");
  assert.equal(c.tasks[0]!.enabled, true);
});

test("sync config: unknown keys and bad values name file and line", () => {
  const cases: [string, RegExp][] = [
    ['log_level = "info"\nbogus = 1\n', /^sync\.hcl:2: Unknown key "bogus" in the top level/],
    ['task {\n  name = "a"\n  module = "m"\n  colour = "red"\n  condition "services" { names = ["w"] }\n}\n', /^sync\.hcl:4: Unknown key "colour" in task "a"/],
    ['port = "eighty"\n', /^sync\.hcl:1: "port" must be an integer/],
    ['buffer_period {\n  min = "soon"\n}\n', /^sync\.hcl:2: "buffer_period\.min" must be a duration/],
    ['task {\n  name = "a"\n  module = "m"\n  condition "weather" {}\n}\n', /^sync\.hcl:4: Unknown condition type "weather"/],
    ['task {\n  name = "a"\n  module = "m"\n  condition "schedule" {\n    cron = "61 * * * *"\n  }\n}\n', /^sync\.hcl:5: .*out of range/],
    ['task {\n  name = "a"\n  module = "m"\n}\n', /needs a condition block or a module_input/],
    ['task {\n  name = "a"\n  module = "m"\n  condition "services" { regexp = "(" }\n}\n', /^sync\.hcl:4: .*not a valid regular expression/],
    ['driver "ansible" {}\n', /^sync\.hcl:1: Unknown driver "ansible"/],
    ['task {\n  name = "a"\n  module = "m"\n  providers = ["aws"]\n  condition "services" { names = ["w"] }\n}\n', /provider "aws" has no terraform_provider block/],
    ['task {\n  name = "a"\n  module = "m"\n  condition "services" { names = ["w"] }\n}\ntask {\n  name = "a"\n  module = "m"\n  condition "services" { names = ["w"] }\n}\n', /^sync\.hcl:7: task "a" is defined twice \(first at sync\.hcl:2\)/],
    ['port = \n', /^sync\.hcl:\d+: /],
    ['driver "terraform" {\n  version = "1.5.0"\n}\n', /^sync\.hcl:2: .*never downloads/],
  ];
  for (const [text, re] of cases) {
    const err = errorOf(text);
    assert.match(err.message, re, text);
    assert.equal(err.file, "sync.hcl");
  }
});

test("sync config: a lone task document (API and CLI create)", () => {
  const t = parseTaskDocument({ file: "task.hcl", text: 'task {\n  name = "x"\n  module = "m"\n  condition "consul-kv" {\n    path = "a/b"\n  }\n}\n' }, { bufferPeriod: { enabled: true, minMs: 5000, maxMs: 20000 } });
  assert.equal(t.name, "x");
  assert.deepEqual(t.condition, { kind: "consul-kv", path: "a/b", recurse: false, datacenter: "", namespace: "", useAsModuleInput: true });
});

test("cron: fields, macros, next times in UTC", () => {
  const c = parseCron("*/15 3 * * mon-fri");
  assert.ok(typeof c !== "string");
  const t0 = Date.UTC(2026, 10, 25, 2, 59, 30); // Wednesday
  assert.equal(new Date(nextCronTime(c, t0)!).toISOString(), "2026-11-25T03:00:00.000Z");
  assert.equal(new Date(nextCronTime(c, Date.UTC(2026, 10, 25, 3, 0, 0))!).toISOString(), "2026-11-25T03:15:00.000Z");
  assert.equal(new Date(nextCronTime(c, Date.UTC(2026, 10, 27, 4, 0, 0))!).toISOString(), "2026-11-30T03:00:00.000Z"); // Fri → Mon
  const secs = parseCron("*/5 * * * * * *");
  assert.ok(typeof secs !== "string");
  assert.equal(nextCronTime(secs, Date.UTC(2026, 0, 1, 0, 0, 1)), Date.UTC(2026, 0, 1, 0, 0, 5));
  const hourly = parseCron("@hourly");
  assert.ok(typeof hourly !== "string");
  assert.equal(nextCronTime(hourly, Date.UTC(2026, 0, 1, 0, 0, 0)), Date.UTC(2026, 0, 1, 1, 0, 0));
  assert.match(parseCron("* * *") as string, /5, 6 or 7 fields/);
  assert.match(parseCron("* 24 * * *") as string, /out of range/);
});
