// Data-driven interaction tests (etcd-io/raft `interaction_test.go`): each
// testdata/*.txt file is a script of commands, each followed by `----` and
// the expected output (core/testing/datadriven.ts). REWRITE=1 regenerates
// the expected output; review the diff.
import { test } from "node:test";
import { basename, join } from "node:path";
import { runFile, scriptFiles } from "../testing/datadriven.ts";
import { InteractionEnv } from "./_interaction_env.ts";

const dir = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "testdata");

for (const path of scriptFiles(dir)) {
  test(`raft interaction: ${basename(path)}`, () => {
    const env = new InteractionEnv();
    runFile(path, (d) => env.handle(d.cmd, d.kv, d.args));
  });
}
