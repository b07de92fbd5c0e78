// `cairn watch` against a real in-process dev agent: without a handler the
// current value is printed and the command ends; the loop hands the current
// value, then every change, to the handler; bad flag combinations fail.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ApiClient } from "../core/api/client.ts";
import { useDevAgent } from "./_test_agent.ts";
import { parseFlags } from "./_flags.ts";
import { watchCommand, watchLoop, watchQuery } from "./watch.ts";
import { until } from "../core/testing/until.ts";

const dev = useDevAgent("watcher");
const io = () => dev.io();

test("watch: without a handler prints the current value once", async () => {
  await dev.api.kv.put("cfg/one", "1");
  let t = io();
  assert.equal(await watchCommand.run(["-type=key", "-key=cfg/one"], t), 0, t.stderrText);
  const pair = JSON.parse(t.stdoutText) as { Key: string; Value: string };
  assert.equal(pair.Key, "cfg/one");
  assert.equal(pair.Value, "MQ==");
  t = io();
  assert.equal(await watchCommand.run(["-type=key", "-key=cfg/missing"], t), 0);
  assert.equal(t.stdoutText.trim(), "null");
  // The dev server's leader reconcile puts the agent's own node in the catalog.
  await until(async () => (await dev.api.catalog.nodes()).nodes.length > 0, "the agent's node in the catalog");
  t = io();
  assert.equal(await watchCommand.run(["-type=nodes"], t), 0);
  assert.deepEqual((JSON.parse(t.stdoutText) as Array<{ Node: string }>).map((n) => n.Node), ["watcher"]);
});

test("watch: flag errors", async () => {
  for (const [args, msg] of [
    [[], /Must specify watch type/],
    [["-type=bogus"], /Unsupported watch type: bogus/],
    [["-type=key"], /Must specify a single key/],
    [["-type=service"], /Must specify a single service/],
    [["-type=checks", "-service=a", "-state=any"], /Cannot specify service and state/],
  ] as const) {
    const t = io();
    assert.equal(await watchCommand.run([...args], t), 1);
    assert.match(t.stderrText, msg);
  }
});

test("watch loop: the handler sees the initial value, then each change, with a growing index", async () => {
  const q = watchQuery(parseFlags(["-type=service", "-service=web", "-passingonly"], [
    { name: "type", kind: "string", usage: "" },
    { name: "service", kind: "string", usage: "" },
    { name: "passingonly", kind: "bool", usage: "" },
  ]));
  assert.ok(typeof q !== "string");
  const seen: Array<{ index: string; nodes: string[] }> = [];
  const ctl = new AbortController();
  const loop = watchLoop(dev.api, q, ctl.signal, { stderr() {} }, async (index, data) => {
    seen.push({ index, nodes: (data as Array<{ Node: { Node: string } }>).map((e) => e.Node.Node) });
  });
  const waitSeen = async (n: number) => {
    await until(() => seen.length >= n, `${n} answers handed to the handler`);
    assert.equal(seen.length, n, JSON.stringify(seen));
  };
  await waitSeen(1);
  assert.deepEqual(seen[0]!.nodes, []);
  await dev.api.catalog.register({ Node: "n1", Address: "10.1.1.1", Service: { Service: "web", Port: 80 } });
  await waitSeen(2);
  assert.deepEqual(seen[1]!.nodes, ["n1"]);
  assert.ok(BigInt(seen[1]!.index) > BigInt(seen[0]!.index));
  await dev.api.catalog.register({ Node: "n1", Address: "10.1.1.1", Check: { CheckID: "c", Name: "c", ServiceID: "web", Status: "critical" } });
  await waitSeen(3);
  assert.deepEqual(seen[2]!.nodes, [], "-passingonly drops the critical instance");
  ctl.abort();
  assert.equal(await loop, 0);
});

test("watch: the handler runs through the shell with the JSON on stdin and CONSUL_INDEX set", async () => {
  const q = watchQuery(parseFlags(["-type=key", "-key=cfg/two"], [
    { name: "type", kind: "string", usage: "" },
    { name: "key", kind: "string", usage: "" },
  ]));
  assert.ok(typeof q !== "string");
  await dev.api.kv.put("cfg/two", "2");
  // The command's loop ends only on SIGINT/SIGTERM: exercise its handler path (startChild) directly.
  const { startChild } = await import("./_child.ts");
  const t = io();
  const child = startChild(['test -n "$CONSUL_INDEX" && cat'], t, { shell: true, env: { CONSUL_INDEX: "9" }, stdin: new TextEncoder().encode('{"Key":"cfg/two"}\n') });
  assert.equal(await child.exited, 0);
  assert.equal(t.stdoutText, '{"Key":"cfg/two"}\n');
});

test("watch loop: events, whose 64-bit hash indexes must round-trip exactly (no busy loop)", { timeout: 15_000 }, async () => {
  const q = watchQuery(parseFlags(["-type=event", "-name=deploy"], [
    { name: "type", kind: "string", usage: "" },
    { name: "name", kind: "string", usage: "" },
  ]));
  assert.ok(typeof q !== "string");
  let requests = 0;
  const counting = new ApiClient({ address: dev.addr, fetch: (input, init) => { requests++; return fetch(input, init); } });
  const seen: string[][] = [];
  const ctl = new AbortController();
  const loop = watchLoop(counting, q, ctl.signal, { stderr() {} }, async (_index, data) => {
    seen.push((data as Array<{ Name: string }>).map((e) => e.Name));
  });
  const fire = (name: string) => fetch(`http://${dev.addr}/v1/event/fire/${name}`, { method: "PUT", body: "x" });
  await until(() => seen.length >= 1, "the first answer");
  await fire("deploy");
  await until(() => seen.length >= 2, "the deploy event");
  assert.deepEqual(seen.at(-1), ["deploy"]);
  await fire("other");
  await new Promise((r) => setTimeout(r, 300));
  const before = requests;
  await new Promise((r) => setTimeout(r, 300));
  assert.ok(requests - before <= 2, `the loop must block, not spin: ${requests - before} requests in 300 ms`);
  ctl.abort();
  assert.equal(await loop, 0);
});
