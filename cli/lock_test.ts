// `cairn lock` against a real in-process dev agent: the child runs only while
// the lock is held, gets CONSUL_LOCK_HELD, its exit code comes back; a held
// lock makes -timeout give up; destroying the session kills the child; -n
// conflicts are refused; a semaphore admits n holders.
import assert from "node:assert/strict";
import { test } from "node:test";
import { useDevAgent } from "./_test_agent.ts";
import { Semaphore } from "../core/api/lock.ts";
import { until } from "../core/testing/until.ts";
import { lockCommand } from "./lock.ts";

const dev = useDevAgent("locker");
const io = () => dev.io();

test("lock: runs the child holding the lock, returns its exit code, cleans the key", async () => {
  const t = io();
  const code = await lockCommand.run(["-verbose", "svc/a", 'test "$CONSUL_LOCK_HELD" = true && echo held; exit 3'], t);
  assert.equal(code, 3, t.stderrText);
  assert.match(t.stdoutText, /Setting up lock at path: svc\/a\/\.lock/);
  assert.match(t.stdoutText, /\nheld\n/);
  assert.equal((await dev.api.kv.get("svc/a/.lock")).pair, null, "lock key removed after release");
  assert.deepEqual((await dev.api.session.list()).sessions, [], "session destroyed");
});

test("lock: -shell=false runs argv directly; -child-exit-code maps failure to 2", async () => {
  const t = io();
  assert.equal(await lockCommand.run(["-shell=false", "-child-exit-code", "svc/b", "/bin/sh", "-c", "exit 7"], t), 2, t.stderrText);
});

test("lock: -timeout gives up while another session holds the lock", async () => {
  const sid = await dev.api.session.create({ Name: "other" });
  assert.equal(await dev.api.kv.put("svc/c/.lock", "", { acquire: sid }), true);
  const t = io();
  const started = Date.now();
  assert.equal(await lockCommand.run(["-timeout=300ms", "svc/c", "echo never"], t), 1);
  assert.ok(Date.now() - started < 3_000, "gave up near the timeout");
  assert.match(t.stderrText, /timeout during lock acquisition/);
  assert.doesNotMatch(t.stdoutText, /never/);
  await dev.api.session.destroy(sid);
});

test("lock: losing the session kills the child", async () => {
  const t = io();
  const running = lockCommand.run(["svc/d", "echo started; sleep 30"], t);
  let sid = "";
  await until(async () => {
    sid = (await dev.api.kv.get("svc/d/.lock")).pair?.Session ?? "";
    return sid !== "" && t.stdoutText.includes("started");
  }, "lock held and child started");
  const t0 = Date.now();
  await dev.api.session.destroy(sid);
  assert.equal(await running, 1);
  assert.ok(Date.now() - t0 < 4_000, "child stopped promptly");
  assert.match(t.stderrText, /Lock lost, killing child/);
});

test("semaphore: admits n holders, refuses a conflicting -n", async () => {
  const a = await new Semaphore(dev.api, { key: "svc/e", limit: 2 }).acquire();
  const b = await new Semaphore(dev.api, { key: "svc/e", limit: 2 }).acquire();
  assert.ok(a && b);
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(), 300);
  assert.equal(await new Semaphore(dev.api, { key: "svc/e", limit: 2 }).acquire(ctl.signal), undefined, "third waits while full");
  const t = io();
  assert.equal(await lockCommand.run(["-n=3", "svc/e", "echo never"], t), 1);
  assert.match(t.stderrText, /limit conflict \(lock: 2, local: 3\)/);
  await a.release();
  const c = await new Semaphore(dev.api, { key: "svc/e", limit: 2 }).acquire();
  assert.ok(c, "a released slot is taken");
  await b.release();
  await c.release();
});
