// In-memory SnapshotStore keeping the newest `retain` snapshots.
import { concatBytes, partsOf } from "../bytes.ts";
import type { SnapshotMeta, SnapshotSink, SnapshotSource, SnapshotStore } from "./types.ts";

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

  begin(): SnapshotSink {
    const chunks: Uint8Array[] = [];
    let written = 0;
    let open = true;
    return {
      get written() {
        return written;
      },
      write: (chunk) => {
        if (!open) return Promise.reject(new Error("snapshot sink is closed"));
        for (const c of partsOf(chunk)) {
          chunks.push(c.slice());
          written += c.length;
        }
        return Promise.resolve();
      },
      read: (offset, length) => Promise.resolve(concatBytes(chunks).slice(offset, Math.min(written, offset + length))),
      flush: () => (open ? Promise.resolve() : Promise.reject(new Error("snapshot sink is closed"))),
      finish: async (meta) => {
        if (!open) throw new Error("snapshot sink is closed");
        open = false;
        const m = { ...structuredClone(meta), sizeBytes: written };
        await this.create(m, concatBytes(chunks));
        return m;
      },
      cancel: () => {
        open = false;
        return Promise.resolve();
      },
    };
  }

  open(which?: { index: number; term: number }): Promise<SnapshotSource | undefined> {
    const s = which ? this.#snaps.find((x) => x.meta.index === which.index && x.meta.term === which.term) : this.#snaps[0];
    if (!s) return Promise.resolve(undefined);
    const data = s.data;
    return Promise.resolve({
      meta: structuredClone(s.meta),
      read: (offset, length) => Promise.resolve(data.slice(offset, offset + length)),
      async *stream() {
        for (let off = 0; off < data.length; off += 64 * 1024) yield data.slice(off, off + 64 * 1024);
      },
      close: () => Promise.resolve(),
    });
  }

  list(): Promise<SnapshotMeta[]> {
    return Promise.resolve(this.#snaps.map((s) => structuredClone(s.meta)));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}
