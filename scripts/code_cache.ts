// Records the V8 code cache that scripts/build.ts puts into the executable
// (scripts/sea_main.cjs loads it). What an agent runs matters, not what the
// bundle contains: V8 writes bytecode only for functions that have been
// compiled, i.e. run. So the build starts a few client agents on 127.0.0.1
// from the just-built executable and lets them do what every agent does
// soon after it starts: answer HTTP, join a pool all at once (push/pull
// both ways, gossip, probes), list members, see a member leave. One of them
// runs with CAIRN_BUILD_CODE_CACHE_OUT and writes its cache on SIGUSR2.
// Everything is killed by PID; every wait has a time limit.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./e2e/harness.ts";

interface TrainingAgent {
  name: string;
  child: ChildProcess;
  http: string;
  gossip: string;
  stderr(): string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, limitMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`Code cache training: timed out waiting for ${what}`);
    await sleep(50);
  }
}

async function aliveCount(a: TrainingAgent): Promise<number> {
  const list = (await (await fetch(`${a.http}/v1/agent/members`)).json()) as Array<{ Status: number }>;
  return list.filter((m) => m.Status === 1).length;
}

/** Write the code cache of `bin` (an executable built around sea_main.cjs) to `out`. */
export async function trainCodeCache(options: { bin: string; out: string; agents?: number }): Promise<void> {
  const n = options.agents ?? 8;
  const dirs: string[] = [];
  const agents: TrainingAgent[] = [];
  const env = { ...process.env };
  // V8 rejects a cache made under other V8 flags: the executable must run as users run it.
  delete env.NODE_OPTIONS;
  const start = async (i: number, trainee: boolean): Promise<TrainingAgent> => {
    const dir = mkdtempSync(join(tmpdir(), "cairn-codecache-"));
    dirs.push(dir);
    const serf = await freePort();
    const http = await freePort();
    const name = `train${i}`;
    const child = spawn(options.bin, [
      "agent", `-node=${name}`, `-data-dir=${dir}`, "-bind=127.0.0.1", "-client=127.0.0.1",
      `-serf-lan-port=${serf}`, `-http-port=${http}`, "-dns-port=-1", "-log-level=warn",
    ], { stdio: ["ignore", "ignore", "pipe"], env: trainee ? { ...env, CAIRN_BUILD_CODE_CACHE_OUT: options.out } : env });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => { stderr += d.toString(); });
    const a = { name, child, http: `http://127.0.0.1:${http}`, gossip: `127.0.0.1:${serf}`, stderr: () => stderr };
    agents.push(a);
    return a;
  };
  try {
    rmSync(options.out, { force: true });
    // Agent 1 is the trainee: it joins agent 0 with everyone else, and agent n-1 joins through it.
    for (let i = 0; i < n; i++) await start(i, i === 1);
    for (const a of agents) {
      await until(`${a.name} to answer HTTP`, 20_000, async () => ((await fetch(`${a.http}/v1/agent/self`)).ok ? true : undefined));
    }
    const trainee = agents[1]!;
    const join = (a: TrainingAgent, to: TrainingAgent) => fetch(`${a.http}/v1/agent/join/${to.gossip}`, { method: "PUT" });
    await Promise.all(agents.slice(1, n - 1).map((a) => join(a, agents[0]!)));
    await join(agents[n - 1]!, trainee);
    await until("all members alive", 20_000, async () => ((await aliveCount(trainee)) === n ? true : undefined));
    for (const path of ["/v1/agent/self", "/v1/agent/members?segment=_all", "/v1/agent/services", "/v1/agent/checks", "/v1/status/leader"]) {
      await fetch(`${trainee.http}${path}`).then((r) => r.arrayBuffer()).catch(() => undefined);
    }
    // A graceful leave (clients leave on SIGTERM) reaches the trainee as leave intents and a "left" member.
    process.kill(agents[n - 1]!.child.pid!, "SIGTERM");
    await until("the member to leave", 20_000, async () => ((await aliveCount(trainee)) === n - 1 ? true : undefined));
    await sleep(1_000); // a few more probe and gossip rounds
    process.kill(trainee.child.pid!, "SIGUSR2");
    await until("the code cache file", 10_000, async () => (existsSync(options.out) && /code cache written/.test(trainee.stderr()) ? true : undefined));
  } finally {
    for (const a of agents) {
      if (a.child.exitCode === null && a.child.signalCode === null) {
        try { process.kill(a.child.pid!, "SIGKILL"); } catch { /* gone */ }
      }
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}
