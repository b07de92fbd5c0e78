// Test toolkit: the real-time poller for tests on real sockets and processes,
// and the data-driven script runner (raft and gossip interaction tests).
// Test-only; simulations use core/sim. Ports for unit tests on real sockets
// are in free_port_node.ts (node only, so not exported here).
export { runFile, normalizeOutput, parseScript, scriptFiles } from "./datadriven.ts";
export type { TestData } from "./datadriven.ts";
export { sleep, until, within } from "./until.ts";
export type { UntilOptions } from "./until.ts";
