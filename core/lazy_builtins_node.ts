// Node built-ins that an agent may never need, loaded on first use.
//
// A static import is evaluated when the executable starts, for every
// command and every agent: node:fs/promises (which pulls in readline and
// most of the stream modules), node:child_process, node:dns/promises and
// node:zlib held resident memory (their sources and compiled code; see
// docs/performance.md) in each client agent, which uses none of them unless it runs a
// script check, resolves a host name or is a server. Only the types are
// imported statically.
import type * as ChildProcess from "node:child_process";
import type * as DnsPromises from "node:dns/promises";
import type * as FsPromises from "node:fs/promises";

type AnyFn = (...args: unknown[]) => unknown;

/** The node:fs/promises function `name`, loading the module on its first call. */
export function lazyFsPromises<K extends keyof typeof FsPromises>(name: K): (typeof FsPromises)[K] {
  return ((...args: unknown[]) => (process.getBuiltinModule("node:fs/promises")[name] as AnyFn)(...args)) as (typeof FsPromises)[K];
}

/** node:child_process spawn, loading the module on its first call. */
export const spawn = ((...args: unknown[]) => (process.getBuiltinModule("node:child_process").spawn as AnyFn)(...args)) as typeof ChildProcess.spawn;

/** node:dns/promises lookup, loading the module on its first call. */
export const lookup = ((...args: unknown[]) => (process.getBuiltinModule("node:dns/promises").lookup as AnyFn)(...args)) as typeof DnsPromises.lookup;
