// `cairn sync start` (also `cairn sync -config-file …`): Consul-Terraform-
// Sync's daemon. Reads CTS config files (HCL or JSON; a directory means
// every *.hcl / *.json in it), watches the catalog and KV, and runs each
// task's driver when what it renders changes. `-once` runs every task once
// and exits.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { ApiClient } from "../core/api/client.ts";
import { needsTlsFetch, tlsFetch } from "../core/api/tls_fetch_node.ts";
import { systemClock } from "../core/clock/mod.ts";
import { ConfigError } from "../core/errors.ts";
import { createLogger } from "../core/log/mod.ts";
import type { LogLevel } from "../core/log/mod.ts";
import { StreamSink } from "../core/log/stream_sink_node.ts";
import { parseSyncConfig } from "../core/sync/config.ts";
import type { ConfigSource, SyncConfig } from "../core/sync/config.ts";
import type { SyncDriver } from "../core/sync/driver.ts";
import { ExecDriver } from "../core/sync/exec_driver_node.ts";
import { TerraformDriver } from "../core/sync/terraform_driver_node.ts";
import { SyncElector } from "../core/sync/ha_node.ts";
import { hostname } from "node:os";
import { serveSyncApi, syncApiHandler } from "../core/sync/api_node.ts";
import type { Logger } from "../core/log/mod.ts";
import { SyncRuntime } from "../core/sync/runtime_node.ts";
import { parseCommandFlags } from "./_command.ts";
import { onShutdownSignal } from "./_child.ts";
import { bool, formatHelp, list, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";

const flags: readonly FlagSpec[] = [
  { name: "config-file", kind: "list", valueName: "path", usage: "A configuration file (HCL or JSON). May be given more than once." },
  { name: "config-dir", kind: "list", valueName: "path", usage: "A directory of configuration files (*.hcl, *.json). May be given more than once." },
  { name: "once", kind: "bool", usage: "Run every task once, then exit." },
  { name: "inspect", kind: "bool", usage: "Show what every task would change (the driver's inspect), then exit without applying." },
  { name: "inspect-task", kind: "list", valueName: "name", usage: "Like -inspect, for the named task only. May be given more than once." },
  { name: "bind", kind: "string", valueName: "address", usage: "Address the API listens on (cairn's addition; CTS listens on every interface). Default 0.0.0.0." },
];

const HELP = `
Usage: cairn sync start [options]

  Runs Consul-Terraform-Sync's daemon against a cairn (or Consul) agent:
  watches the services and KV paths named by each task's condition and
  module inputs, and runs the task's driver (terraform or exec) when what it
  renders changes. Configuration is CTS's format, in HCL or JSON.
`;

/** Read the files named by -config-file and -config-dir, in order. */
export function readConfigSources(files: readonly string[], dirs: readonly string[]): ConfigSource[] {
  const out: ConfigSource[] = [];
  const addFile = (f: string) => {
    let text: string;
    try {
      text = readFileSync(f, "utf8");
    } catch (err) {
      throw new ConfigError(`Cannot read config file "${f}": ${(err as Error).message}`, { file: f });
    }
    out.push({ file: f, text });
  };
  for (const f of files) {
    let isDir = false;
    try {
      isDir = statSync(f).isDirectory();
    } catch {
      // addFile reports it
    }
    if (isDir) dirs = [...dirs, f];
    else addFile(f);
  }
  for (const d of dirs) {
    let names: string[];
    try {
      names = readdirSync(d).filter((n) => /\.(hcl|json)$/.test(n)).sort();
    } catch (err) {
      throw new ConfigError(`Cannot read config directory "${d}": ${(err as Error).message}`, { file: d });
    }
    for (const n of names) addFile(join(d, n));
  }
  if (out.length === 0) throw new ConfigError("No configuration: give -config-file or -config-dir");
  return out;
}

/** The agent client a sync instance uses (consul {} block, CONSUL_* env already folded in). */
function syncApiClient(cfg: SyncConfig): ApiClient {
  const t = cfg.consul.tls;
  const tls = { caFile: t.caCert, caPath: t.caPath, certFile: t.cert, keyFile: t.key, serverName: t.serverName, verify: t.verify };
  const fetch = t.enabled && needsTlsFetch(tls) ? tlsFetch(tls) : undefined;
  return new ApiClient({ address: cfg.consul.address, token: cfg.consul.token, useTls: t.enabled, ...(fetch ? { fetch } : {}) });
}

/** The secrets to keep out of logs and run output: the token, provider block values. */
function syncSecrets(cfg: SyncConfig): string[] {
  const out: string[] = [];
  if (cfg.consul.token) out.push(cfg.consul.token);
  const walk = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (typeof v === "object" && v !== null) Object.values(v).forEach(walk);
  };
  walk(cfg.terraformProviders);
  return out.filter((s) => s.length >= 4);
}

async function syncDriver(cfg: SyncConfig, baseDir: string, env: Record<string, string | undefined>): Promise<SyncDriver> {
  if (cfg.driver.kind === "exec") return new ExecDriver(cfg.driver.exec, { baseDir, secrets: syncSecrets(cfg) });
  let d: TerraformDriver;
  try {
    d = new TerraformDriver(cfg, { baseDir, secrets: syncSecrets(cfg), env });
    await d.init();
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return d;
}

/** -inspect / -inspect-task: render each task, ask the driver what it would change, print, exit. */
async function inspectTasks(cfg: SyncConfig, driver: SyncDriver, logger: Logger, only: readonly string[], io: CliIo): Promise<number> {
  for (const n of only) {
    if (!cfg.tasks.some((t) => t.name === n)) {
      io.stderr(`Error: no task named "${n}" in the configuration\n`);
      return 1;
    }
  }
  const tasks = cfg.tasks.filter((t) => only.length === 0 || only.includes(t.name)).map((t) => ({ ...t, enabled: false }));
  // Disabled tasks keep their watchers and render, but never apply.
  const runtime = new SyncRuntime({ config: { ...cfg, tasks }, client: syncApiClient(cfg), driver, clock: systemClock, logger, runAll: true });
  await runtime.start();
  let failed = false;
  try {
    for (const t of tasks) {
      const r = await runtime.inspect(t.name);
      io.stdout(`==> Task "${t.name}"${r.ok ? "" : " (inspect failed)"}\n${r.plan ?? r.outputTail}\n`);
      if (!r.ok) failed = true;
    }
  } catch (err) {
    io.stderr(`Error: ${(err as Error).message}\n`);
    failed = true;
  } finally {
    await runtime.stop();
  }
  return failed ? 1 : 0;
}

export const syncStartCommand: Command = {
  name: "sync start",
  synopsis: "Run Consul-Terraform-Sync's daemon (tasks driven by catalog changes)",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(syncStartCommand, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Unexpected argument "${p.positionals[0]}"\n${syncStartCommand.help()}`);
      return 1;
    }
    let cfg: SyncConfig;
    let driver: SyncDriver;
    const files = list(p, "config-file");
    try {
      cfg = parseSyncConfig(readConfigSources(files, list(p, "config-dir")), io.env);
      const baseDir = files[0] ? dirname(resolve(files[0])) : process.cwd();
      driver = await syncDriver(cfg, baseDir, { ...process.env, ...io.env });
    } catch (err) {
      if (err instanceof ConfigError) {
        io.stderr(`Error: ${err.message}\n`);
        return 1;
      }
      throw err;
    }
    const logger = createLogger({ sink: new StreamSink({ write: (l) => io.stderr(l) }), level: cfg.logLevel as LogLevel, name: "sync" });
    for (const w of driver.warnings) logger.warn(w);
    const once = bool(p, "once");
    const inspectOnly = bool(p, "inspect") || list(p, "inspect-task").length > 0;
    if (inspectOnly) return inspectTasks(cfg, driver, logger, list(p, "inspect-task"), io);
    const ha = once ? undefined : cfg.highAvailability;
    const client = syncApiClient(cfg);
    const runtime = new SyncRuntime({ config: cfg, client, driver, clock: systemClock, logger, runAll: once, inactive: ha !== undefined });
    const shutdown = onShutdownSignal();
    try {
      await runtime.start();
      logger.info("sync started", { tasks: cfg.tasks.length, driver: driver.kind, once });
      if (once) {
        await new Promise<void>((done) => {
          const check = setInterval(() => {
            if (runtime.allTasksRanOnce() || shutdown.signal.aborted) {
              clearInterval(check);
              done();
            }
          }, 50);
        });
        const failed = runtime.taskNames().filter((n) => runtime.runs(n).at(-1)?.status === "errored");
        await runtime.stop();
        if (failed.length > 0) {
          io.stderr(`Error: task run failed: ${failed.join(", ")}\n`);
          return 1;
        }
        logger.info("all tasks ran once; exiting");
        return 0;
      }
      let api: Awaited<ReturnType<typeof serveSyncApi>>;
      let elector: SyncElector | undefined;
      const bind = str(p, "bind") || "0.0.0.0";
      try {
        api = await serveSyncApi(syncApiHandler(runtime, { leaderAddress: () => elector?.leaderAddress() }), { host: bind, port: cfg.port });
      } catch (err) {
        io.stderr(`Error: cannot serve the sync API on port ${cfg.port}: ${(err as Error).message}\n`);
        await runtime.stop();
        return 1;
      }
      logger.info("api listening", { port: api.port });
      if (ha) {
        const key = `${runtime.kvPath}leader/${ha.clusterName}`;
        const address = ha.instanceAddress || `http://${bind === "0.0.0.0" ? hostname() : bind}:${api.port}`;
        elector = new SyncElector({
          client,
          clock: systemClock,
          logger: logger.named("ha"),
          key,
          ttlMs: ha.leaderTtlMs,
          address,
          onLeader: () => runtime.takeOver(),
          onFollower: () => runtime.setActive(false),
        });
        elector.start();
        logger.info("high availability: waiting to be elected", { key, address });
      }
      await new Promise<void>((done) => shutdown.signal.addEventListener("abort", () => done(), { once: true }));
      logger.info("shutting down");
      runtime.setActive(false);
      await runtime.stop();
      await elector?.stop();
      api.server.close();
      return 0;
    } finally {
      shutdown.cancel();
    }
  },
};

/** `cairn sync -config-file …`: the same as `cairn sync start` (CTS's own spelling). */
export const syncCommand: Command = {
  name: "sync",
  synopsis: "Consul-Terraform-Sync: run network automation tasks on catalog changes",
  help: () => formatHelp(HELP.replace("cairn sync start", "cairn sync [start]"), flags),
  run: (args, io) => syncStartCommand.run(args, io),
};
