// A datacenter of real processes (issue #24): 3 cairn servers and N client
// agents (default 150) on 127.0.0.1, every client -retry-joining the servers.
// Prints, with the machine's load:
//   - start-up: time until every server lists all N + 3 members alive, and
//     until the leader's catalog has every one of them as a node (the
//     leader's serfHealth reconcile of N members joining at once);
//   - steady state: each server's CPU (% of one core) and RSS, and the
//     clients' mean RSS, over BENCH_STEADY_S (20) seconds of idle gossip;
//   - a failure: one client is killed (SIGKILL); time until every server
//     lists it failed, and until the leader's catalog has its serfHealth
//     critical;
//   - a mass failure: BENCH_MASS (a third of the clients) killed together;
//     time until every server lists them all failed, and until the leader's
//     catalog has every one's serfHealth critical (the reconcile of a mass
//     failure), and the leader's CPU meanwhile.
// Usage: node --import tsx scripts/bench/gossip-fleet.ts [N=150]
// (CAIRN_E2E_BIN or dist/cairn). Every process is killed by PID at the end
// (scripts/e2e/harness.ts also kills them when this process exits).
import { readFileSync } from "node:fs";
import { cairnBin, getJson, makeCluster, waitForLeader, type Agent } from "../e2e/harness.ts";
import { sleep } from "../../core/testing/until.ts";
import { load } from "./_proc.ts";

const N = Number(process.argv[2] ?? 150);
const concurrency = Number(process.env.BENCH_START_CONCURRENCY ?? 6);
const steadyS = Number(process.env.BENCH_STEADY_S ?? 20);
const phaseLimitMs = Number(process.env.BENCH_PHASE_LIMIT_MS ?? 600_000);
const tick = 100; // USER_HZ

function proc(pid: number): { cpuTicks: number; rssMiB: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return { cpuTicks: Number(fields[11]) + Number(fields[12]), rssMiB: kib / 1024 };
}

interface Member { Name: string; Status: number }

async function waitUntil(what: string, pred: () => Promise<boolean>, intervalMs = 1_000): Promise<number> {
  const t0 = performance.now();
  while (!(await pred())) {
    if (performance.now() - t0 > phaseLimitMs) throw new Error(`${what}: not reached within ${phaseLimitMs} ms`);
    await sleep(intervalMs);
  }
  return performance.now() - t0;
}

async function main(): Promise<void> {
  console.log(`gossip fleet: 3 servers + ${N} clients (${cairnBin}); ${load()}`);
  const c = await makeCluster(3, { prefix: "cairn-bench-fleet-" });
  const clients: Agent[] = [];
  try {
    for (const s of c.servers) c.start(s);
    const leader = await waitForLeader(c, c.servers, { timeoutMs: 60_000 });
    const pids = c.servers.map((s) => s.proc!.pid);
    const cpu0 = pids.map((p) => proc(p).cpuTicks);
    const t0 = performance.now();

    // Clients in batches (a fleet brought up by a deploy tool, not one by one).
    let next = 0;
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < N) {
        const i = next++;
        clients.push(await c.startClient(`client-${String(i).padStart(4, "0")}`, { ready: "http" }));
      }
    }));
    const startedMs = performance.now() - t0;
    console.log(`  ${N} clients started (HTTP up) in ${(startedMs / 1000).toFixed(1)} s; ${load()}`);

    const total = N + 3;
    const aliveOn = async (url: string): Promise<number> => {
      const ms = (await getJson(url, 10_000)) as Member[] | undefined;
      return ms ? ms.filter((m) => m.Status === 1).length : 0;
    };
    await waitUntil("every server lists every member alive", async () => {
      const counts = await Promise.all(c.servers.map((s) => aliveOn(c.url(s, "/v1/agent/members"))));
      return counts.every((x) => x === total);
    });
    const membersMs = performance.now() - t0;
    await waitUntil("the leader's catalog has every member", async () => {
      const passing = (await getJson(c.url(leader, "/v1/health/state/passing"), 10_000)) as { CheckID: string }[] | undefined;
      return (passing ?? []).filter((x) => x.CheckID === "serfHealth").length === total;
    });
    const catalogMs = performance.now() - t0;
    const cpu1 = pids.map((p) => proc(p).cpuTicks);
    console.log(`  all-see-all on the servers: ${(membersMs / 1000).toFixed(1)} s after the first client started; ` +
      `catalog has all ${total} nodes with serfHealth passing: ${(catalogMs / 1000).toFixed(1)} s; ${load()}`);
    console.log(`  servers' CPU over the start-up: ${cpu1.map((x, i) => ((x - cpu0[i]!) / tick).toFixed(1)).join(" / ")} CPU-s ` +
      `(leader ${leader.name})`);

    // Steady state.
    await sleep(5_000);
    const s0 = pids.map((p) => proc(p).cpuTicks);
    const w0 = performance.now();
    await sleep(steadyS * 1_000);
    const wallS = (performance.now() - w0) / 1000;
    const s1 = pids.map((p) => proc(p));
    const clientRss = clients.map((a) => proc(a.proc.pid).rssMiB);
    const mean = clientRss.reduce((a, b) => a + b, 0) / clientRss.length;
    console.log(`  steady ${steadyS} s: servers' CPU ${s1.map((x, i) => (((x.cpuTicks - s0[i]!) / tick / wallS) * 100).toFixed(1)).join(" / ")} % of a core, ` +
      `RSS ${s1.map((x) => x.rssMiB.toFixed(0)).join(" / ")} MiB; clients' RSS mean ${mean.toFixed(0)} MiB ` +
      `(max ${Math.max(...clientRss).toFixed(0)}); ${load()}`);

    // A failure.
    const victim = clients[Math.floor(clients.length / 2)]!;
    const k0 = performance.now();
    await victim.proc.kill("SIGKILL");
    const failedMs = await waitUntil("every server lists the killed client failed", async () => {
      const lists = await Promise.all(c.servers.map((s) => getJson(c.url(s, "/v1/agent/members"), 10_000) as Promise<Member[] | undefined>));
      return lists.every((ms) => ms?.find((m) => m.Name === victim.name)?.Status === 4);
    }, 200);
    const criticalMs = await waitUntil("the catalog has the killed client's serfHealth critical", async () => {
      const checks = (await getJson(c.url(leader, `/v1/health/node/${victim.name}`), 10_000)) as { CheckID: string; Status: string }[] | undefined;
      return checks?.find((x) => x.CheckID === "serfHealth")?.Status === "critical";
    }, 200);
    console.log(`  kill -9 ${victim.name}: failed on all 3 servers after ${(failedMs / 1000).toFixed(1)} s, ` +
      `serfHealth critical in the catalog after ${((performance.now() - k0) / 1000).toFixed(1)} s ` +
      `(+${(criticalMs / 1000).toFixed(1)} s); ${load()}`);

    // A mass failure.
    const mass = Number(process.env.BENCH_MASS ?? Math.floor(N / 3));
    const doomed = clients.filter((a) => a !== victim).slice(0, mass);
    const names = new Set(doomed.map((a) => a.name));
    const lc0 = proc(leader.proc!.pid).cpuTicks;
    const m0 = performance.now();
    await Promise.all(doomed.map((a) => a.proc.kill("SIGKILL")));
    await waitUntil(`every server lists the ${mass} killed clients failed`, async () => {
      const lists = await Promise.all(c.servers.map((s) => getJson(c.url(s, "/v1/agent/members"), 10_000) as Promise<Member[] | undefined>));
      return lists.every((ms) => ms !== undefined && ms.filter((m) => names.has(m.Name) && m.Status === 4).length === mass);
    }, 500);
    const massFailedMs = performance.now() - m0;
    await waitUntil(`the catalog has the ${mass} killed clients' serfHealth critical`, async () => {
      const critical = (await getJson(c.url(leader, "/v1/health/state/critical"), 10_000)) as { Node: string; CheckID: string }[] | undefined;
      return (critical ?? []).filter((x) => x.CheckID === "serfHealth" && names.has(x.Node)).length === mass;
    }, 500);
    const massCriticalMs = performance.now() - m0;
    const leaderCpuS = (proc(leader.proc!.pid).cpuTicks - lc0) / tick;
    console.log(`  kill -9 ${mass} clients at once: all failed on all 3 servers after ${(massFailedMs / 1000).toFixed(1)} s, ` +
      `all serfHealth critical in the catalog after ${(massCriticalMs / 1000).toFixed(1)} s; leader used ${leaderCpuS.toFixed(1)} CPU-s meanwhile; ${load()}`);
  } finally {
    for (const a of clients) await a.stop();
    await c.stopAll();
    c.root.remove();
  }
}

await main();
