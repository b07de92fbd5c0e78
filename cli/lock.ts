// `cairn lock`, as consul command/lock: hold a lock (or a semaphore slot for
// -n > 1) under a KV prefix and run a child only while it is held. The child
// gets CONSUL_LOCK_HELD=true; losing the lock (session invalidated, key
// taken) or an interrupt stops it (SIGTERM, then SIGKILL). Exit code: the
// child's (with -child-exit-code, Consul's 2 for any failure), 1 for errors
// or a lost lock.
import { Lock, LockConflictError, Semaphore, type Held } from "../core/api/lock.ts";
import { parseCommandFlags, stripLeadingSlash } from "./_command.ts";
import { onShutdownSignal, startChild } from "./_child.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, num, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpFlags,
  { name: "n", kind: "int", valueName: "int", defaultText: "1", usage: "Optional limit on the number of concurrent lock holders. The underlying implementation switches from a lock to a semaphore when increased past one." },
  { name: "name", kind: "string", valueName: "string", usage: "Optional name to associate with the lock session. It not provided, one is generated based on the provided child command." },
  { name: "pass-stdin", kind: "bool", usage: "Pass stdin to the child process." },
  { name: "shell", kind: "bool", defaultText: "true", usage: "Use a shell to run the command (can set a custom shell via the SHELL environment variable). The default value is true." },
  { name: "timeout", kind: "duration", valueName: "duration", usage: 'Maximum amount of time to wait to acquire the lock, specified as a duration like "1s" or "3h". The default value is 0.' },
  { name: "try", kind: "duration", valueName: "duration", usage: "DEPRECATED. Use -timeout instead." },
  { name: "monitor-retry", kind: "int", valueName: "int", defaultText: "3", usage: "Number of times to retry if Consul returns a 500 error while monitoring the lock. This allows riding out brief periods of unavailability without causing leader elections, but increases the amount of time required to detect a lost lock in some cases." },
  { name: "child-exit-code", kind: "bool", usage: "Exit 2 if the child process exited with an error if this is true, otherwise the child's own exit code is returned." },
  { name: "verbose", kind: "bool", usage: "Enable verbose (debugging) output." },
];

const HELP = `
Usage: cairn lock [options] prefix child...

  Acquires a lock or semaphore at a given path, and invokes a child process
  when successful. The child process can assume the lock is held while it
  executes. If the lock is lost or communication is disrupted the child
  process will be sent a SIGTERM signal and given time to gracefully exit.
  After the grace period expires the process will be hard terminated.

  For Consul agents on Windows, the child process is always hard terminated
  with a SIGKILL, since Windows has no POSIX compatible notion for SIGTERM.

  When -n=1, only a single lock holder or leader exists providing mutual
  exclusion. Setting a higher value switches to a semaphore allowing multiple
  holders to coordinate.

  The prefix provided must have write privileges.
`;

export const lockCommand: Command = {
  name: "lock",
  synopsis: "Execute a command holding a lock",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(lockCommand, args, flags, io);
    if (typeof p === "number") return p;
    const limit = num(p, "n") ?? 1;
    const shell = p.values.has("shell") ? bool(p, "shell") : true;
    const verbose = bool(p, "verbose");
    const timeoutMs = num(p, "timeout") ?? num(p, "try") ?? 0;
    const monitorRetries = num(p, "monitor-retry") ?? 3;
    if (limit <= 0) {
      io.stderr("Lock holder limit must be positive\n");
      return 1;
    }
    if (p.positionals.length < 2) {
      io.stderr(`Key prefix and child command must be specified\n`);
      return 1;
    }
    if (timeoutMs < 0) {
      io.stderr("Timeout must be positive\n");
      return 1;
    }
    const prefix = stripLeadingSlash(p.positionals[0]!);
    const child = p.positionals.slice(1);
    const name = str(p, "name") || `Consul lock for '${child.join(" ")}' at '${prefix}'`;
    const info = (s: string) => {
      if (verbose) io.stdout(`${s}\n`);
    };
    const client = apiClientFromFlags(p, io);
    const shutdown = onShutdownSignal();
    const acquireCtl = new AbortController();
    const acquireSignal = AbortSignal.any([shutdown.signal, acquireCtl.signal]);
    const timer = timeoutMs > 0 ? setTimeout(() => acquireCtl.abort(new Error("timeout")), timeoutMs) : undefined;
    let held: Held | undefined;
    try {
      if (limit === 1) {
        const key = `${prefix.replace(/\/+$/, "")}/.lock`;
        info(`Setting up lock at path: ${key}`);
        info("Attempting lock acquisition");
        held = await new Lock(client, { key, sessionName: name, monitorRetries, log: info }).acquire(acquireSignal);
      } else {
        info(`Setting up semaphore (limit ${limit}) at prefix: ${prefix}`);
        info("Attempting lock acquisition");
        held = await new Semaphore(client, { key: prefix, limit, sessionName: name, monitorRetries, log: info }).acquire(acquireSignal);
      }
    } catch (err) {
      clearTimeout(timer);
      shutdown.cancel();
      io.stderr(err instanceof LockConflictError ? `Lock acquisition failed: ${err.message}\n` : `Lock acquisition failed: ${apiErrorText(err)}\n`);
      return 1;
    }
    clearTimeout(timer);
    if (!held) {
      shutdown.cancel();
      io.stderr("Shutdown triggered or timeout during lock acquisition\n");
      return 1;
    }

    info("Starting handler");
    const stdin = bool(p, "pass-stdin") ? "inherit" as const : "ignore" as const;
    const proc = startChild(child, io, { shell, env: { CONSUL_LOCK_HELD: "true", CAIRN_LOCK_HELD: "true" }, stdin });
    const stop = new Promise<"lost" | "interrupted">((resolve) => {
      held.lost.addEventListener("abort", () => resolve("lost"), { once: true });
      shutdown.signal.addEventListener("abort", () => resolve("interrupted"), { once: true });
    });
    const outcome = await Promise.race([proc.exited.then((code) => ({ code })), stop]);
    let code: number;
    if (typeof outcome === "object") {
      code = outcome.code;
      if (code !== 0) info(`Child exited with code ${code}`);
      if (bool(p, "child-exit-code")) code = code === 0 ? 0 : 2;
    } else {
      io.stderr(outcome === "lost" ? "Lock lost, killing child\n" : "Shutdown triggered, killing child\n");
      await proc.terminate();
      code = 1;
    }
    shutdown.cancel();
    try {
      await held.release();
      info("Cleanup succeeded");
    } catch (err) {
      io.stderr(`Lock release failed: ${apiErrorText(err)}\n`);
      return 1;
    }
    return code;
  },
};
