// Records the V8 code cache that scripts/build.ts puts into the executable
// (scripts/sea_main.cjs loads it). What an agent runs matters, not what the
// bundle contains: V8 writes bytecode only for functions that have been
// compiled, i.e. run. So the build starts a few client agents on 127.0.0.1
// from the just-built executable and lets them do what every agent does
// soon after it starts: answer HTTP, join a pool all at once (push/pull
// both ways, gossip, probes), list members, see a member leave. One of them
// runs with CAIRN_BUILD_CODE_CACHE_OUT and writes its cache on SIGUSR2.
// Everything is killed by PID; every wait has a time limit.
import { existsSync, rmSync } from "node:fs";
import { startAgent, waitUp, type Agent } from "./e2e/harness.ts";
import { sleep, until } from "../core/testing/until.ts";

async function aliveCount(a: Agent): Promise<number> {
  const list = (await (await fetch(`${a.http}/v1/agent/members`)).json()) as Array<{ Status: number }>;
  return list.filter((m) => m.Status === 1).length;
}

/** Write the code cache of `bin` (an executable built around sea_main.cjs) to `out`. */
export async function trainCodeCache(options: { bin: string; out: string; agents?: number }): Promise<void> {
  const n = options.agents ?? 8;
  const agents: Agent[] = [];
  // V8 rejects a cache made under other V8 flags: the executable must run as users run it.
  const env = { NODE_OPTIONS: undefined };
  const start = async (i: number, trainee: boolean): Promise<Agent> => {
    const a = await startAgent(`train${i}`, {
      args: ["-log-level=warn"],
      bin: options.bin,
      env: trainee ? { ...env, CAIRN_BUILD_CODE_CACHE_OUT: options.out } : env,
      ready: false,
    });
    agents.push(a);
    return a;
  };
  try {
    rmSync(options.out, { force: true });
    // Agent 1 is the trainee: it joins agent 0 with everyone else, and agent n-1 joins through it.
    for (let i = 0; i < n; i++) await start(i, i === 1);
    for (const a of agents) await waitUp(a, "http", { timeoutMs: 20_000 });
    const trainee = agents[1]!;
    const join = (a: Agent, to: Agent) => fetch(`${a.http}/v1/agent/join/${to.serfAddr}`, { method: "PUT" });
    await Promise.all(agents.slice(1, n - 1).map((a) => join(a, agents[0]!)));
    await join(agents[n - 1]!, trainee);
    await until(async () => (await aliveCount(trainee)) === n, "all members alive", { timeoutMs: 20_000, intervalMs: 50 });
    for (const path of ["/v1/agent/self", "/v1/agent/members?segment=_all", "/v1/agent/services", "/v1/agent/checks", "/v1/status/leader"]) {
      await fetch(`${trainee.http}${path}`).then((r) => r.arrayBuffer()).catch(() => undefined);
    }
    // A graceful leave (clients leave on SIGTERM) reaches the trainee as leave intents and a "left" member.
    process.kill(agents[n - 1]!.proc.pid, "SIGTERM");
    await until(async () => (await aliveCount(trainee)) === n - 1, "the member to leave", { timeoutMs: 20_000, intervalMs: 50 });
    await sleep(1_000); // a few more probe and gossip rounds
    process.kill(trainee.proc.pid, "SIGUSR2");
    await until(() => existsSync(options.out) && /code cache written/.test(trainee.proc.output()), "the code cache file", { timeoutMs: 10_000, intervalMs: 50 });
  } catch (err) {
    throw new Error(`Code cache training: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    for (const a of agents) await a.stop();
  }
}
