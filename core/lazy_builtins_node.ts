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
import type * as NodeCrypto from "node:crypto";
import type * as DnsPromises from "node:dns/promises";
import type * as FsPromises from "node:fs/promises";
import type * as NodeZlib from "node:zlib";

type AnyFn = (...args: unknown[]) => unknown;

/** The node:fs/promises function `name`, loading the module on its first call. */
export function lazyFsPromises<K extends keyof typeof FsPromises>(name: K): (typeof FsPromises)[K] {
  return ((...args: unknown[]) => (process.getBuiltinModule("node:fs/promises")[name] as AnyFn)(...args)) as (typeof FsPromises)[K];
}

/** node:child_process spawn, loading the module on its first call. */
export const spawn = ((...args: unknown[]) => (process.getBuiltinModule("node:child_process").spawn as AnyFn)(...args)) as typeof ChildProcess.spawn;

/** node:dns/promises lookup, loading the module on its first call. */
export const lookup = ((...args: unknown[]) => (process.getBuiltinModule("node:dns/promises").lookup as AnyFn)(...args)) as typeof DnsPromises.lookup;

// Kept once loaded: getBuiltinModule resolves the name on every call (~0.1 ms;
// a snapshot save asked a few times per MiB).
let zlibModule: typeof NodeZlib | undefined;
let cryptoModule: typeof NodeCrypto | undefined;

/** node:zlib, loaded on first use. */
export const lazyZlib = (): typeof NodeZlib => (zlibModule ??= process.getBuiltinModule("node:zlib"));

/** node:crypto, loaded on first use. */
export const lazyCrypto = (): typeof NodeCrypto => (cryptoModule ??= process.getBuiltinModule("node:crypto"));
