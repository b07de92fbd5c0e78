import assert from "node:assert/strict";
import { test } from "node:test";
import { Metrics } from "./metrics.ts";

function setup(hostname = "") {
  let now = 0;
  const m = new Metrics({ now: () => now, wallNow: () => 1_700_000_000_000 + now, intervalMs: 10_000, hostname });
  return { m, at: (ms: number) => (now = ms) };
}

test("metrics: the JSON shows the last finished interval, with go-metrics' aggregate fields", () => {
  const { m, at } = setup();
  at(1_000);
  m.incr("serf.member.join");
  m.incr("serf.member.join", 2);
  m.sample("api.http", 4, { method: "GET", path: "v1.kv._" });
  m.sample("api.http", 8, { method: "GET", path: "v1.kv._" });
  const during = m.json() as { Counters: Array<Record<string, unknown>>; Samples: Array<Record<string, unknown>> };
  assert.equal(during.Counters.length, 1, "with only one interval, that one");
  at(12_000);
  m.incr("serf.member.join");
  const after = m.json() as { Timestamp: string; Counters: Array<Record<string, unknown>>; Samples: Array<Record<string, unknown>>; Points: unknown[] };
  assert.equal(after.Timestamp, "2023-11-14 22:13:20 +0000 UTC");
  assert.deepEqual(after.Counters, [{ Name: "consul.serf.member.join", Count: 2, Rate: 0.3, Sum: 3, Min: 1, Max: 2, Mean: 1.5, Stddev: Math.SQRT1_2, Labels: {} }]);
  assert.deepEqual(after.Samples.map((s) => [s.Name, s.Count, s.Mean, s.Labels]), [["consul.api.http", 2, 6, { method: "GET", path: "v1.kv._" }]]);
  at(35_000);
  assert.deepEqual((m.json() as { Counters: unknown[] }).Counters, [], "an idle interval is empty, not an older one");
});

test("metrics: gauges are read when shown, with the hostname when it is not disabled; Prometheus keeps totals", () => {
  const { m, at } = setup("web-1");
  let members = 3;
  m.addGauges(() => [["members.clients", members], ["memberlist.health.score", 0, { network: "lan" }]]);
  at(1_000);
  m.incr("serf.member.join");
  at(11_000);
  m.incr("serf.member.join");
  m.sample("api.http", 2.5, { method: "PUT", path: 'v1.kv."x"' });
  members = 4;
  const json = m.json() as { Gauges: Array<{ Name: string; Value: number }> };
  assert.deepEqual(json.Gauges.map((g) => [g.Name, g.Value]), [["consul.web-1.memberlist.health.score", 0], ["consul.web-1.members.clients", 4]]);
  assert.equal(m.prometheus(), [
    "# TYPE consul_web_1_memberlist_health_score gauge",
    'consul_web_1_memberlist_health_score{network="lan"} 0',
    "# TYPE consul_web_1_members_clients gauge",
    "consul_web_1_members_clients 4",
    "# TYPE consul_serf_member_join counter",
    "consul_serf_member_join 2",
    "# TYPE consul_api_http summary",
    'consul_api_http_sum{method="PUT",path="v1.kv.\\"x\\""} 2.5',
    'consul_api_http_count{method="PUT",path="v1.kv.\\"x\\""} 1',
    "",
  ].join("\n"));
});
