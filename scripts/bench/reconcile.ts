// The leader's serfHealth reconcile at scale (issue #24 part 3), in one
// process: a dev server (one-voter Raft, in-memory log: no fsync, so these
// figures are the leader's CPU per member, not disk) and a gossip pool of
// BENCH_MEMBERS (10,000) members the leader sees, of which BENCH_FAIL (1,000)
// then fail. Prints the wall time and the catalog lookups for:
//   - the first full reconcile: every member registered at once (10,000
//     nodes joining: the leader's own share of a mass registration),
//   - a full pass over every member with nothing to write (what each member
//     event cost before events named their members),
//   - BENCH_FAIL members failing together (one event each, before the leader
//     runs), and the same number failing one by one (each event handled
//     before the next: failures trickling in as gossip detects them),
// at reconcileConcurrency 32 (the default) and 1 (one write at a time).
// Usage: node --import tsx scripts/bench/reconcile.ts
import { nullLogger } from "../../core/log/mod.ts";
import { createDevServer } from "../../core/server/dev.ts";
import { Leader } from "../../core/server/leader/leader.ts";
import type { LanPoolLike, MemberLike } from "../../core/server/leader/membership.ts";
import { checksOfNode } from "../../core/state/catalog.ts";
import { Rng } from "../../core/sim/rng.ts";
import { SimClock } from "../../core/sim/sim_clock.ts";
import { load } from "./_proc.ts";

const members = Number(process.env.BENCH_MEMBERS ?? 10_000);
const failing = Number(process.env.BENCH_FAIL ?? 1_000);

type Listener = (e: { type: string; members: MemberLike[] }) => void;

class Pool implements LanPoolLike {
  readonly byName = new Map<string, MemberLike>();
  readonly #subs = new Set<Listener>();
  members(): MemberLike[] {
    return [...this.byName.values()];
  }
  onMemberEvent(fn: Listener): () => void {
    this.#subs.add(fn);
    return () => this.#subs.delete(fn);
  }
  fail(name: string): void {
    const m = { ...this.byName.get(name)!, status: "failed" };
    this.byName.set(name, m);
    for (const fn of this.#subs) fn({ type: "failed", members: [m] });
  }
}

async function run(concurrency: number): Promise<void> {
  const clock = new SimClock();
  const dev = await createDevServer({ clock, rng: new Rng(1), logger: nullLogger() });
  const pool = new Pool();
  pool.byName.set("srv1", { name: "srv1", addr: "10.0.0.1", port: 8301, status: "alive", tags: { role: "consul", dc: "dc1", port: "8300", id: "id-srv1" } });
  for (let i = 0; i < members; i++) {
    const name = `node-${i}`;
    pool.byName.set(name, { name, addr: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 8301, status: "alive", tags: { role: "node", dc: "dc1", id: `id-${i}` } });
  }
  const leader = new Leader({
    server: dev.server, fsm: dev.fsm, consensus: dev.consensus, lan: pool, clock, logger: nullLogger(),
    nodeName: "srv1", datacenter: "dc1", reconcileConcurrency: concurrency,
  });
  const critical = (from: number, to: number): boolean => {
    for (let i = from; i < to; i++) {
      if (checksOfNode(dev.fsm.state, `node-${i}`).find((c) => c.checkId === "serfHealth")?.status !== "critical") return false;
    }
    return true;
  };

  let t = performance.now();
  leader.start();
  await clock.runFor(10);
  const registerMs = performance.now() - t;
  const entries0 = dev.raft.core.lastIndex;

  // Together: every failure event before the leader runs again.
  let e0 = leader.stats.examined;
  t = performance.now();
  for (let i = 0; i < failing; i++) pool.fail(`node-${i}`);
  await clock.runFor(10);
  const togetherMs = performance.now() - t;
  const togetherExamined = leader.stats.examined - e0;
  if (!critical(0, failing)) throw new Error("not every failed member is critical");

  // One by one: each event handled before the next.
  e0 = leader.stats.examined;
  t = performance.now();
  for (let i = failing; i < 2 * failing; i++) {
    pool.fail(`node-${i}`);
    await clock.runFor(1);
  }
  const trickleMs = performance.now() - t;
  const trickleExamined = leader.stats.examined - e0;
  if (!critical(failing, 2 * failing)) throw new Error("not every failed member is critical");
  const entries = dev.raft.core.lastIndex - entries0;
  // What each member event cost before events named their members: a full pass (here with nothing to write).
  t = performance.now();
  await leader.reconcileSoon();
  const passMs = performance.now() - t;
  leader.stop();
  await dev.stop();
  console.log(`| ${concurrency} | ${(registerMs / 1000).toFixed(2)} | ${togetherMs.toFixed(0)} | ${togetherExamined} | ` +
    `${trickleMs.toFixed(0)} | ${trickleExamined} | ${entries} | ${passMs.toFixed(0)} | ${load()} |`);
}

console.log(`leader reconcile: ${members} members registered by the first pass, then ${failing} fail together and ${failing} one by one (dev server, in-memory Raft log)`);
console.log("| writes in flight | register all, s | fail together, ms | lookups | fail one by one, ms | lookups | Raft entries for the failures | full pass, nothing to write, ms | load |");
console.log("|---:|---:|---:|---:|---:|---:|---:|---:|---|");
await run(32);
await run(1);
