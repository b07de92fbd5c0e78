import { test } from "node:test";
import assert from "node:assert/strict";
import { parseSyncConfig } from "./config.ts";
import { renderHealthEntries } from "./render.ts";
import type { RenderedInputs } from "./render.ts";
import { SyncScheduler } from "./scheduler.ts";
import type { RunOrder } from "./scheduler.ts";
import { moduleVariables, taskDependencies, taskSpec } from "./task.ts";

function entry(id: string, opts: { node?: string; port?: number; status?: string; output?: string; tags?: string[] } = {}) {
  return {
    Node: { ID: "n-1", Node: opts.node ?? "node1", Address: "10.0.0.1", Datacenter: "dc1", TaggedAddresses: { lan: "10.0.0.1" }, Meta: {} },
    Service: { ID: id, Service: "web", Kind: "", Address: "", Port: opts.port ?? 80, Tags: opts.tags ?? [], Meta: {}, Namespace: "" },
    Checks: [{ CheckID: `service:${id}`, Status: opts.status ?? "passing", Output: opts.output ?? "ok" }],
  };
}

const WEB = "health /v1/health/service/web?passing=1";

function config(extra = "") {
  return parseSyncConfig([
    {
      file: "s.hcl",
      text: `
buffer_period {
  min = "1s"
  max = "4s"
}
task {
  name = "a"
  module = "m"
  condition "services" { names = ["web"] }
  ${extra}
}
task {
  name = "b"
  module = "m"
  condition "services" {
    names = ["web"]
    cts_user_defined_meta = { owner = "b" }
  }
}
`,
    },
  ]);
}

/** A scheduler over the config's tasks, and a log of what it ordered. */
function world(maxConcurrentRuns = 4, extra = "") {
  const cfg = config(extra);
  const s = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns });
  let now = 0;
  for (const t of cfg.tasks) s.addTask(taskSpec(t), now);
  const runs: RunOrder<RenderedInputs>[] = [];
  const drain = () => {
    const rd = s.ready();
    runs.push(...rd.runs);
    return rd;
  };
  return {
    s,
    runs,
    cfg,
    data(value: unknown) {
      s.step({ kind: "data", dep: WEB, value: renderHealthEntries(value, {}), now });
      return drain();
    },
    /** Advance virtual time, ticking at every deadline on the way (what the driver's timer does). */
    advance(ms: number) {
      const end = now + ms;
      for (;;) {
        const rd = drain();
        if (rd.nextDeadline === undefined || rd.nextDeadline > end) break;
        now = rd.nextDeadline;
        s.step({ kind: "tick", now, wallNow: 1_700_000_000_000 + now });
      }
      now = end;
      s.step({ kind: "tick", now, wallNow: 1_700_000_000_000 + now });
      return drain();
    },
    done(r: RunOrder, ok = true) {
      s.step({ kind: "runDone", task: r.task, runId: r.runId, ok, now });
      return drain();
    },
    get now() {
      return now;
    },
  };
}

test("sync scheduler: one watcher per dependency, shared by the tasks", () => {
  const w = world();
  assert.deepEqual(w.s.dependencies(), [WEB]);
  assert.deepEqual(taskDependencies(w.cfg.tasks[0]!).map((d) => d.key), [WEB]);
});

test("sync scheduler: start run, then buffered change runs; check output alone never runs", () => {
  const w = world();
  w.data([entry("web-1")]);
  assert.deepEqual(w.runs.map((r) => [r.task, r.trigger]), [["a", "start"], ["b", "start"]]);
  assert.deepEqual(Object.keys(w.runs[0]!.inputs.services!), ["web-1.node1.dc1"]);
  assert.deepEqual(w.runs[1]!.inputs.services!["web-1.node1.dc1"]!.cts_user_defined_meta, { owner: "b" });
  for (const r of [...w.runs]) w.done(r);
  w.runs.length = 0;

  // Only the check's output changes: the render is the same, so no run, ever.
  w.data([entry("web-1", { output: "still ok, at 12:01" })]);
  w.advance(10_000);
  assert.equal(w.runs.length, 0);

  // A new instance: waits out min=1s, then one run per task.
  w.data([entry("web-1"), entry("web-2")]);
  w.advance(999);
  assert.equal(w.runs.length, 0);
  w.advance(1);
  assert.deepEqual(w.runs.map((r) => [r.task, r.trigger, r.changed]), [["a", "change", [WEB]], ["b", "change", [WEB]]]);
});

test("sync scheduler: a burst is coalesced, and max bounds the wait", () => {
  const w = world();
  w.data([entry("web-1")]);
  for (const r of [...w.runs]) w.done(r);
  w.runs.length = 0;
  // A change every 500 ms: min (1s) never elapses, max (4s) cuts in.
  for (let i = 0; i < 12; i++) {
    w.data([entry("web-1", { port: 1000 + i })]);
    w.advance(500);
  }
  const a = w.runs.filter((r) => r.task === "a");
  assert.equal(a.length, 1, "one run for the first 4 s of the burst");
  assert.equal(a[0]!.inputs.services!["web-1.node1.dc1"]!.port, 1007); // the data at t=4s
});

test("sync scheduler: a change during a run triggers exactly one more run afterwards", () => {
  const w = world(4);
  w.data([entry("web-1")]);
  const [a1] = w.runs.filter((r) => r.task === "a");
  w.done(w.runs.find((r) => r.task === "b")!);
  // a1 still running: two changes arrive and their buffer passes.
  w.data([entry("web-1", { status: "critical" })]);
  w.data([entry("web-1"), entry("web-2", { status: "critical" })]);
  w.advance(5_000);
  assert.equal(w.runs.filter((r) => r.task === "a").length, 1, "never two runs of one task at once");
  w.done(a1!);
  const again = w.runs.filter((r) => r.task === "a");
  assert.equal(again.length, 2);
  assert.equal(again[1]!.trigger, "change");
  // It renders the latest data, not the first change of the two.
  assert.equal(again[1]!.inputs.services!["web-1.node1.dc1"]!.status, "passing");
  assert.equal(again[1]!.inputs.services!["web-2.node1.dc1"]!.status, "critical");
});

test("sync scheduler: critical and deregistered instances change the render", () => {
  const w = world();
  w.data([entry("web-1"), entry("web-2")]);
  for (const r of [...w.runs]) w.done(r);
  w.runs.length = 0;
  // The agent's ?passing answer drops a critical instance; status is in the render too.
  w.data([entry("web-1"), entry("web-2", { status: "warning" })]);
  w.advance(1_000);
  assert.equal(w.runs.length, 2);
  assert.equal(w.runs[0]!.inputs.services!["web-2.node1.dc1"]!.status, "warning");
  for (const r of [...w.runs]) w.done(r);
  w.runs.length = 0;
  w.data([entry("web-1")]);
  w.advance(1_000);
  assert.deepEqual(Object.keys(w.runs[0]!.inputs.services!), ["web-1.node1.dc1"]);
});

test("sync scheduler: a change and its undo before the deadline is no run", () => {
  const w = world();
  w.data([entry("web-1")]);
  for (const r of [...w.runs]) w.done(r);
  w.runs.length = 0;
  w.data([entry("web-1", { tags: ["x"] })]);
  w.advance(200);
  w.data([entry("web-1")]);
  w.advance(10_000);
  assert.equal(w.runs.length, 0);
});

test("sync scheduler: bounded concurrency starts waiting tasks as others end", () => {
  const w = world(1);
  w.data([entry("web-1")]);
  assert.deepEqual(w.runs.map((r) => r.task), ["a"]);
  w.done(w.runs[0]!);
  assert.deepEqual(w.runs.map((r) => r.task), ["a", "b"]);
});

test("sync scheduler: disabled tasks keep their data and run once when enabled", () => {
  const w = world(4, "enabled = false");
  w.data([entry("web-1")]);
  assert.deepEqual(w.runs.map((r) => r.task), ["b"]);
  w.data([entry("web-1"), entry("web-2")]);
  w.advance(10_000);
  assert.deepEqual(w.runs.map((r) => r.task), ["b"]); // b still running: no second b; a disabled
  w.s.setEnabled("a", true, w.now);
  const rd = w.s.ready();
  assert.deepEqual(rd.runs.map((r) => [r.task, r.trigger]), [["a", "enable"]]);
  assert.deepEqual(Object.keys(rd.runs[0]!.inputs.services!).sort(), ["web-1.node1.dc1", "web-2.node1.dc1"]);
});

test("sync scheduler: applied hash survives a restart; a run that never finished runs again", () => {
  const cfg = config();
  const s1 = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns: 4 });
  s1.addTask(taskSpec(cfg.tasks[0]!), 0);
  s1.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1")], {}), now: 0 });
  const [r] = s1.ready().runs;
  s1.step({ kind: "runDone", task: "a", runId: r!.runId, ok: true, now: 1 });
  const applied = s1.task("a")!.appliedHash!;
  assert.equal(applied, r!.hash);

  // Restart with the applied hash: same data → no run; new data → a run.
  const s2 = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns: 4 });
  s2.addTask(taskSpec(cfg.tasks[0]!, applied), 0);
  s2.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1")], {}), now: 0 });
  assert.equal(s2.ready().runs.length, 0);
  // A failed run is not applied: after a restart it runs again.
  const s3 = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns: 4 });
  s3.addTask(taskSpec(cfg.tasks[0]!, "0000000000000000"), 0);
  s3.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1")], {}), now: 0 });
  s3.step({ kind: "tick", now: 1_000, wallNow: 0 });
  assert.equal(s3.ready().runs.length, 1);
});

test("sync scheduler: manual runs, schedule tasks, removal", () => {
  const cfg = parseSyncConfig([
    { file: "s.hcl", text: 'task {\n name = "cron"\n module = "m"\n condition "schedule" { cron = "*/10 * * * * * *" }\n module_input "services" { names = ["web"] }\n}\n' },
  ]);
  const s = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns: 2 });
  const wall0 = Date.UTC(2026, 0, 1, 0, 0, 1);
  s.addTask(taskSpec(cfg.tasks[0]!), 0);
  s.step({ kind: "tick", now: 0, wallNow: wall0 });
  s.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1")], {}), now: 0 });
  assert.equal(s.ready().runs.length, 0, "data never triggers a schedule task");
  s.step({ kind: "tick", now: 9_000, wallNow: wall0 + 9_000 });
  const rd = s.ready();
  assert.deepEqual(rd.runs.map((r) => r.trigger), ["schedule"]);
  assert.deepEqual(moduleVariables(rd.runs[0]!.inputs), { services: rd.runs[0]!.inputs.services });
  assert.equal(rd.nextWallDeadline, Date.UTC(2026, 0, 1, 0, 0, 20));
  s.step({ kind: "runNow", task: "cron", now: 9_500 });
  assert.equal(s.ready().runs.length, 0, "the running task is not started twice");
  s.step({ kind: "runDone", task: "cron", runId: rd.runs[0]!.runId, ok: true, now: 9_600 });
  assert.deepEqual(s.ready().runs.map((r) => r.trigger), ["manual"]);
  assert.equal(s.removeTask("cron"), true);
  assert.deepEqual(s.dependencies(), []);
});

test("sync scheduler: paused (HA follower) nothing starts; resumed, the latest render runs", () => {
  const cfg = config();
  const s = new SyncScheduler<RenderedInputs>({ maxConcurrentRuns: 4 });
  s.setPaused(true, 0);
  s.addTask(taskSpec(cfg.tasks[0]!), 0);
  s.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1")], {}), now: 0 });
  s.step({ kind: "data", dep: WEB, value: renderHealthEntries([entry("web-1"), entry("web-2")], {}), now: 10 });
  s.step({ kind: "tick", now: 10_000, wallNow: 0 });
  assert.equal(s.ready().runs.length, 0);
  s.setPaused(false, 10_000);
  const [r] = s.ready().runs;
  assert.equal(r!.trigger, "start");
  assert.deepEqual(Object.keys(r!.inputs.services!), ["web-1.node1.dc1", "web-2.node1.dc1"]);
  s.step({ kind: "runNow", task: "a", now: 10_001, trigger: "failover" });
  s.step({ kind: "runDone", task: "a", runId: r!.runId, ok: true, now: 10_002 });
  assert.deepEqual(s.ready().runs.map((x) => x.trigger), ["failover"]);
});
