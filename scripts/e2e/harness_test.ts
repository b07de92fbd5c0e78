// The e2e harness itself: freePort() must not hand out a port twice in one
// process (the OS offers a just-closed ephemeral port again now and then:
// about 6 repeats in 300 listen(0) calls here).
import assert from "node:assert/strict";
import { test } from "node:test";
import { freePort } from "./harness.ts";

test("harness: freePort never repeats a port within a process", async () => {
  const ports: number[] = [];
  for (let i = 0; i < 300; i++) ports.push(await freePort());
  assert.equal(new Set(ports).size, ports.length, `repeated: ${ports.filter((p, i) => ports.indexOf(p) !== i)}`);
});
