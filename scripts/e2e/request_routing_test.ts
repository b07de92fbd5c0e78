// End-to-end: the request path's two client-visible rules, on the built
// binary. A request naming a datacenter nobody knows is refused before any
// endpoint runs (Consul's 500 "No path to datacenter"; NXDOMAIN in DNS) and
// writes nothing; an unclean path ("//", "/./", "/../") is answered 301 to
// the clean one with the query kept, and real clients follow it.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { join } from "node:path";
import { cairnBin, run, startDevAgent, tempDir, type DevAgent } from "./harness.ts";

const cryptBin = "/usr/bin/crypt-xordataexchange";

function rawGet(port: number, path: string): Promise<{ status: number; location: string | undefined }> {
  return new Promise((resolve, reject) => {
    get({ host: "127.0.0.1", port, path }, (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, location: res.headers.location });
    }).once("error", reject);
  });
}

describe("request routing on a dev agent", () => {
  let agent: DevAgent;
  before(async () => {
    agent = await startDevAgent();
  });
  after(async () => {
    await agent?.stop();
  });

  test("an unknown ?dc is refused on every endpoint family, and a PUT writes nothing", async () => {
    const cases: Array<[string, string, string?]> = [
      ["GET", "/v1/kv/x?dc=nowhere"],
      ["PUT", "/v1/kv/x?dc=nowhere", "v"],
      ["DELETE", "/v1/kv/x?dc=nowhere"],
      ["GET", "/v1/catalog/nodes?dc=nowhere"],
      ["GET", "/v1/catalog/services?dc=nowhere"],
      ["GET", "/v1/health/service/consul?dc=nowhere"],
      ["GET", "/v1/session/list?dc=nowhere"],
      ["PUT", "/v1/session/create?dc=nowhere", "{}"],
      ["PUT", "/v1/txn?dc=nowhere", JSON.stringify([{ KV: { Verb: "set", Key: "x", Value: "dg==" } }])],
      ["GET", "/v1/status/leader?dc=nowhere"],
    ];
    for (const [method, path, body] of cases) {
      const r = await fetch(`${agent.http}${path}`, { method, body });
      assert.equal(r.status, 500, `${method} ${path}`);
      assert.equal(await r.text(), "No path to datacenter", `${method} ${path}`);
    }
    const stored = await fetch(`${agent.http}/v1/kv/x`);
    assert.equal(stored.status, 404, "nothing was written here");
    const local = await fetch(`${agent.http}/v1/kv/x?dc=dc1`, { method: "PUT", body: "here" });
    assert.equal(await local.text(), "true", "naming our own datacenter is fine");
  });

  test("the CLI's -datacenter gets the same error", async () => {
    const r = await run(cairnBin, ["kv", "get", `-http-addr=127.0.0.1:${agent.httpPort}`, "-datacenter=nowhere", "x"]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No path to datacenter/);
  });

  test("DNS answers NXDOMAIN for a service or node in an unknown datacenter", async () => {
    for (const name of ["consul.service.nowhere.consul", `${"node"}.node.nowhere.consul`]) {
      const r = await run("dig", ["@127.0.0.1", "-p", String(agent.dnsPort), "+tries=1", "+time=2", name]);
      assert.match(r.stdout, /status: NXDOMAIN/, name);
    }
    const ok = await run("dig", ["@127.0.0.1", "-p", String(agent.dnsPort), "+tries=1", "+time=2", "consul.service.dc1.consul"]);
    assert.match(ok.stdout, /status: NOERROR/);
  });

  test("unclean paths are redirected to the clean path with the query kept", async () => {
    await fetch(`${agent.http}/v1/kv/app/config`, { method: "PUT", body: "value" });
    // fetch() would clean "/./" and "/../" itself: send the path as it is.
    for (const path of ["/v1/kv//app/config?raw", "/v1/kv/./app/config?raw", "/v1/kv/app/x/../config?raw", "/v1//kv/app//config?raw"]) {
      const r = await rawGet(agent.httpPort, path);
      assert.equal(r.status, 301, path);
      assert.equal(r.location, "/v1/kv/app/config?raw", path);
    }
    const dotted = await run("curl", ["-sL", "--path-as-is", `${agent.http}/v1/kv/app/./x/../config?raw`]);
    assert.equal(dotted.stdout, "value");
    const curl = await run("curl", ["-sL", `${agent.http}/v1/kv//app/config?raw`]);
    assert.equal(curl.stdout, "value", "curl -L follows it");
  });

  test("a Go client that writes keys with a leading slash (Debian's crypt) works", { skip: existsSync(cryptBin) ? false : `${cryptBin} is not installed (Debian golang-github-xordataexchange-crypt)` }, async () => {
    const dir = tempDir();
    try {
      const file = join(dir.path, "config.json");
      writeFileSync(file, '{"feature":true}\n');
      const endpoint = `127.0.0.1:${agent.httpPort}`;
      const set = await run(cryptBin, ["set", "-backend", "consul", "-endpoint", endpoint, "-plaintext", "/crypt/app", file]);
      assert.equal(set.code, 0, set.stderr);
      const get = await run(cryptBin, ["get", "-backend", "consul", "-endpoint", endpoint, "-plaintext", "/crypt/app"]);
      assert.equal(get.code, 0, get.stderr);
      assert.equal(get.stdout.trim(), '{"feature":true}');
    } finally {
      dir.remove();
    }
  });
});
