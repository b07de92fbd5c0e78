// In-memory SnapshotStore keeping the newest `retain` snapshots.
import type { SnapshotMeta, SnapshotStore } from "./types.ts";

export class MemorySnapshotStore implements SnapshotStore {
  #snaps: { meta: SnapshotMeta; data: Uint8Array }[] = [];
  #retain: number;

  constructor(options: { retain?: number } = {}) {
    this.#retain = Math.max(1, options.retain ?? 2);
  }

  create(meta: SnapshotMeta, data: Uint8Array): Promise<void> {
    this.#snaps.unshift({ meta: structuredClone(meta), data: data.slice() });
    this.#snaps.sort((a, b) => b.meta.index - a.meta.index);
    this.#snaps.length = Math.min(this.#snaps.length, this.#retain);
    return Promise.resolve();
  }

  latest(): Promise<{ meta: SnapshotMeta; data: Uint8Array } | undefined> {
    const s = this.#snaps[0];
    return Promise.resolve(s ? { meta: structuredClone(s.meta), data: s.data.slice() } : undefined);
  }

  list(): Promise<SnapshotMeta[]> {
    return Promise.resolve(this.#snaps.map((s) => structuredClone(s.meta)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
