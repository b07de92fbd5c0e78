// Gossip interaction scripts (etcd-io/raft interaction_test.go style):
// testdata/*.txt hold commands and their expected output, run through
// core/testing/datadriven.ts; REWRITE=1 regenerates the output, review the
// diff. `serf_*.txt` run on SerfSimWorld (SerfCores with drivers on the
// deterministic sim: they document cairn's own behaviours, timers and all);
// the others on SwimStepWorld (SwimCores stepped by hand). The commands are
// listed in _interaction_env.ts.
import { test } from "node:test";
import { basename, join } from "node:path";
import { runFile, scriptFiles } from "../testing/datadriven.ts";
import { SerfSimWorld, SwimStepWorld } from "./_interaction_env.ts";
import type { GossipWorld } from "./_interaction_env.ts";

const dir = join(import.meta.dirname ?? new URL(".", import.meta.url).pathname, "testdata");

for (const path of scriptFiles(dir)) {
  const file = basename(path);
  test(`gossip interaction: ${file}`, () => {
    const world: GossipWorld = file.startsWith("serf_") ? new SerfSimWorld() : new SwimStepWorld();
    runFile(path, (d) => world.handle(d));
  });
}
