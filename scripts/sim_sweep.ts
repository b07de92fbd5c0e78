// Long Raft simulation sweep: `SIM_SEEDS=20000 npm run sim:sweep`.
// Runs the 3-server, 5-server and membership scenarios of core/raft's
// simulation for SIM_SEEDS seeds each (default 2,000) starting at
// SIM_SEED_BASE, prints every failing seed with its replay command, and exits
// non-zero if any failed. `--only=3|5|membership` narrows it.
import { seeds } from "../core/sim/rng.ts";
import { runScenario } from "../core/raft/_sim_cluster.ts";

const only = process.argv.find((a) => a.startsWith("--only="))?.slice(7);
const list = seeds(2_000);
const kinds = [
  { name: "3", file: "sim_test.ts", opts: { servers: 3 } },
  { name: "5", file: "sim5_test.ts", opts: { servers: 5 } },
  { name: "membership", file: "sim_membership_test.ts", opts: { servers: 5, initialVoters: 3, membership: true } },
].filter((k) => !only || k.name === only);

async function main(): Promise<void> {
  let failed = 0;
  const t0 = performance.now();
  for (const k of kinds) {
    for (const [i, seed] of list.entries()) {
      const { error } = await runScenario({ seed, ...k.opts });
      if (error) {
        failed++;
        console.log(`FAIL ${k.name} seed ${seed} (replay: SIM_SEED=${seed} node --import tsx --test core/raft/${k.file})\n${error}\n`);
      }
      if ((i + 1) % 500 === 0) console.log(`${k.name}: ${i + 1}/${list.length} seeds, ${failed} failed, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    }
  }
  console.log(`done: ${kinds.length * list.length} runs, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

void main();
