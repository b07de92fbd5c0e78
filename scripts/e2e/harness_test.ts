// The e2e harness itself: freePort() must not hand out a port twice in one
// process (the OS offers a just-closed ephemeral port again now and then:
// about 6 repeats in 300 listen(0) calls here); processes get the
// environment and stdio asked for.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { exitOf, freePort, hostPort, run, startProcess, tempDir, waitFor } from "./harness.ts";

test("harness: freePort never repeats a port within a process", async () => {
  const ports: number[] = [];
  for (let i = 0; i < 300; i++) ports.push(await freePort());
  assert.equal(new Set(ports).size, ports.length, `repeated: ${ports.filter((p, i) => ports.indexOf(p) !== i)}`);
});

test("harness: env entries add and remove variables; stdio to a file", async () => {
  process.env.CAIRN_HARNESS_TEST_GONE = "here";
  const r = await run("sh", ["-c", 'echo "${CAIRN_HARNESS_TEST_SET}/${CAIRN_HARNESS_TEST_GONE:-unset}"'], { env: { CAIRN_HARNESS_TEST_SET: "x", CAIRN_HARNESS_TEST_GONE: undefined } });
  assert.deepEqual([r.code, r.stdout], [0, "x/unset\n"]);
  const dir = tempDir();
  try {
    const file = join(dir.path, "out.log");
    const p = startProcess("sh", ["-c", "echo to-file; echo err >&2"], { stdio: { file } });
    assert.equal(await p.exited, 0);
    assert.equal(p.output(), "");
    assert.equal(readFileSync(file, "utf8"), "to-file\nerr\n");
  } finally {
    dir.remove();
  }
});

test("harness: waitFor fails at once when the process it waits on exits", async () => {
  const p = startProcess("sh", ["-c", "echo bye; exit 3"]);
  const t0 = performance.now();
  await assert.rejects(waitFor(() => false, { timeoutMs: 10_000, failOn: exitOf(p, "sh") }), { message: "sh exited with 3" });
  assert.ok(performance.now() - t0 < 5_000);
  assert.deepEqual(hostPort("127.0.0.1:8500"), { host: "127.0.0.1", port: 8500 });
  assert.equal(hostPort(""), undefined);
});
