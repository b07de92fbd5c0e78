// The storage contract suites against the in-memory stores.
import { logStoreContract, snapshotStoreContract, stableStoreContract } from "./store_contract_node.ts";
import { MemoryLogStore } from "./log_store_memory.ts";
import { MemorySnapshotStore } from "./snapshot_store_memory.ts";
import { MemoryStableStore } from "./stable_store_memory.ts";

logStoreContract("memory", { create: () => Promise.resolve(new MemoryLogStore()), reopen: (s) => Promise.resolve(s) });
stableStoreContract("memory", { create: () => Promise.resolve(new MemoryStableStore()), reopen: (s) => Promise.resolve(s) });
snapshotStoreContract("memory", { create: () => Promise.resolve(new MemorySnapshotStore()), reopen: (s) => Promise.resolve(s) });
logStoreContract("memory without a crash model (-dev)", {
  create: () => Promise.resolve(new MemoryLogStore({ modelCrashes: false, copyEntries: false })),
  reopen: (s) => Promise.resolve(s),
});
