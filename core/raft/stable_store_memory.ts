// In-memory StableStore. Models durability: a write is visible at once but becomes
// durable only when its (optionally delayed) "fsync" finishes, and `crash()`
// throws away everything not yet durable, so the simulation can kill a node
// mid-write.
import type { HardState, StableStore } from "./types.ts";
import type { MemoryStoreOptions } from "./log_store_memory.ts";

const immediate = (): Promise<void> => Promise.resolve();

export class MemoryStableStore implements StableStore {
  #state: HardState | undefined;
  #durable: HardState | undefined;
  #epoch = 0;
  #syncDelay: () => Promise<void>;

  constructor(options: MemoryStoreOptions = {}) {
    this.#syncDelay = options.syncDelay ?? immediate;
  }

  load(): Promise<HardState | undefined> {
    return Promise.resolve(this.#state ? { ...this.#state } : undefined);
  }

  async save(state: HardState): Promise<void> {
    const epoch = this.#epoch;
    this.#state = { ...state };
    await this.#syncDelay();
    if (epoch !== this.#epoch) throw new Error("Stable store crashed during sync");
    this.#durable = { ...state };
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  crash(): void {
    this.#epoch++;
    this.#state = this.#durable ? { ...this.#durable } : undefined;
  }
}

