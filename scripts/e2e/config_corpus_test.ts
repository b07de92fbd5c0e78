// dist/cairn started on a Consul config directory: the corpus's server.hcl
// (moved to loopback, one server, a temporary data dir), a service
// definition in HCL and HCL watches. It must start, register the service, and
// log one warning per key it does not honour, naming the file and line.
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { loadConfig } from "../../core/config/load_node.ts";
import { cairn, cairnBin, freePort, root, startAgentProcess, tempDir, waitFor, type Proc } from "./harness.ts";

const corpus = join(root, "core/config/testdata/consul_corpus");
const managementToken = "6a1f2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const auth = { "X-Consul-Token": managementToken };

describe("dist/cairn agent -config-dir with Consul's HCL files", { skip: !existsSync(cairnBin) && "dist/cairn is missing: run npm run build" }, () => {
  const dir = tempDir("cairn-e2e-corpus-");
  const configDir = join(dir.path, "consul.d");
  let proc: Proc;
  let http: string;

  before(async () => {
    cpSync(corpus, configDir, { recursive: true, filter: (src) => src === corpus || ["server.hcl", "web.hcl", "watches.hcl"].some((f) => src.endsWith(f)) });
    const server = readFileSync(join(configDir, "server.hcl"), "utf8")
      .replace('data_dir   = "/opt/consul"', `data_dir   = ${JSON.stringify(join(dir.path, "data"))}`)
      .replace("bootstrap_expect = 3", "bootstrap_expect = 1")
      .replace(/"10\.0\.1\.10"/g, '"127.0.0.1"')
      .replace('client_addr = "0.0.0.0"', 'client_addr = "127.0.0.1"')
      .replace('retry_join = ["10.0.1.11", "10.0.1.12"]', "")
      .replace('log_file             = "/var/log/consul/"', `log_file             = ${JSON.stringify(join(dir.path, "log") + "/")}`)
      // The certificates the tls stanza names, made where a test may write, as `consul tls` would have made them.
      .replaceAll("/etc/consul.d/certs/", join(dir.path, "certs") + "/")
      .replace("https    = 8501", `https    = ${await freePort()}`);
    assert.doesNotMatch(server, /10\.0\.1\.|\/opt\/consul|\/var\/log|\/etc\/consul\.d|8501/, "server.hcl moved to loopback, a temporary data dir, log directory, certificates and HTTPS port");
    mkdirSync(join(dir.path, "certs"));
    for (const args of [["tls", "ca", "create"], ["tls", "cert", "create", "-server"]]) {
      const r = await cairn(args, { cwd: join(dir.path, "certs") });
      assert.equal(r.code, 0, `cairn ${args.join(" ")}: ${r.stdout}${r.stderr}`);
    }
    mkdirSync(join(dir.path, "log"));
    writeFileSync(join(configDir, "server.hcl"), server);
    // The files turn ACLs on with default deny: the operator's first step is a management token.
    const agent = await startAgentProcess([`-config-dir=${configDir}`, `-hcl=acl { tokens { initial_management = "${managementToken}" } }`], { bin: cairnBin, name: "corpus" });
    ({ proc, http } = agent);
  });

  after(async () => {
    await proc?.kill("SIGKILL");
    dir.remove();
  });

  test("it runs the server the files describe and registers the HCL service", async () => {
    // The leader creates the initial management token once it is leader: wait for it to work.
    const self = await (await waitFor(async () => {
      const r = await fetch(`${http}/v1/agent/self`, { headers: auth });
      return r.ok ? r : undefined;
    }, { what: "the initial management token" })).json() as { Config: { NodeName: string; Datacenter: string; Server: boolean } };
    assert.deepEqual([self.Config.NodeName, self.Config.Datacenter, self.Config.Server], ["consul-server-1", "dc1", true]);
    const services = await waitFor(async () => {
      const s = (await (await fetch(`${http}/v1/agent/services`, { headers: auth })).json()) as Record<string, { Service: string; Port: number; Tags: string[] }>;
      return s["web-1"] ? s : undefined;
    }, { what: "service web-1" });
    assert.deepEqual([services["web-1"]!.Service, services["web-1"]!.Port, services["web-1"]!.Tags], ["web", 8080, ["v1", "primary"]]);
  });

  test("it logs one warning per key it does not honour, with file and line", () => {
    const lines = proc.output().split("\n").filter((l) => l.includes("[WARN]") && l.includes("Config key"));
    const file = (name: string) => join(configDir, name);
    const expected = [
      `Config key "connect" from "${file("server.hcl")}" line 66 has no effect in cairn: the service mesh (Connect) is not part of cairn`,
      `Config key "service.connect" from "${file("web.hcl")}" line 28 has no effect in cairn: the service mesh (Connect) is not part of cairn`,
    ];
    for (const message of expected) {
      assert.equal(lines.filter((l) => l.includes(message)).length, 1, `one line with ${message}\n--- warnings ---\n${lines.join("\n")}`);
    }
    // Exactly the warnings the config loader gives for these files, each once (keys cairn honours give none).
    const keys = loadConfig({ paths: [{ kind: "dir", path: configDir }] }).warnings.filter((w) => w.key).map((w) => w.key!);
    assert.equal(lines.length, keys.length, `${keys.join(", ")}\n--- logged ---\n${lines.join("\n")}`);
    for (const key of keys) assert.equal(lines.filter((l) => l.includes(`"${key}" from`)).length, 1, key);
  });

  test("log_file from the config gets the agent's log", () => {
    assert.match(readFileSync(join(dir.path, "log", "consul.log"), "utf8"), /agent: started/);
  });
});
