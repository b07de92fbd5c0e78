// Watch sets: how a blocking query learns that the data it read has changed.
// Like go-memdb's WatchSet, but instead of one channel per radix node we keep
// precise waiter lists per key and per prefix, so a write wakes exactly the
// readers of that key or of a prefix of it, and never scans all watchers.

/** Where one registration lives: a waiter set inside a registry map. */
interface Registration {
  owner: Map<string, Set<WatchSet>>;
  key: string;
  set: Set<WatchSet>;
}

/**
 * What a read watched. Pass one to store reads; call `onFire` to be told (once)
 * when any watched item changes after a commit, or when the store is abandoned.
 */
export class WatchSet {
  #regs: Registration[] = [];
  #fired = false;
  #listener: (() => void) | undefined;

  get fired(): boolean {
    return this.#fired;
  }

  /** Number of live registrations (for tests and metrics). */
  get size(): number {
    return this.#regs.length;
  }

  /** Calls fn once when the set fires; at once if it already has. Replaces a previous listener. */
  onFire(fn: () => void): void {
    if (this.#fired) {
      fn();
      return;
    }
    this.#listener = fn;
  }

  /** Stop watching and free every registration. Safe to call twice. */
  cancel(): void {
    this.#listener = undefined;
    this.#unregister();
  }

  /** @internal Used by WatchRegistry. */
  _register(owner: Map<string, Set<WatchSet>>, key: string): void {
    if (this.#fired) return;
    let set = owner.get(key);
    if (!set) {
      set = new Set();
      owner.set(key, set);
    }
    if (set.has(this)) return;
    set.add(this);
    this.#regs.push({ owner, key, set });
  }

  /** @internal Wake the listener; drops every registration first. */
  _fire(): void {
    if (this.#fired) return;
    this.#fired = true;
    this.#unregister();
    const fn = this.#listener;
    this.#listener = undefined;
    fn?.();
  }

  #unregister(): void {
    for (const r of this.#regs) {
      r.set.delete(this);
      if (r.set.size === 0 && r.owner.get(r.key) === r.set) r.owner.delete(r.key);
    }
    this.#regs.length = 0;
  }
}

function fireAll(set: Set<WatchSet>): void {
  // The set was already detached from its map; firing removes each watcher
  // from its other registrations.
  for (const ws of set) ws._fire();
}

/** Waiters of one table: exact keys and key prefixes. */
export class WatchRegistry {
  readonly #keys = new Map<string, Set<WatchSet>>();
  readonly #prefixes = new Map<string, Set<WatchSet>>();

  /** Watch one key (whether or not it exists). */
  watchKey(ws: WatchSet, key: string): void {
    ws._register(this.#keys, key);
  }

  /** Watch every key starting with prefix ("" = the whole table). */
  watchPrefix(ws: WatchSet, prefix: string): void {
    ws._register(this.#prefixes, prefix);
  }

  /** Wake the watchers of key and of every watched prefix of key. */
  notify(key: string): void {
    const exact = this.#keys.get(key);
    if (exact) {
      this.#keys.delete(key);
      fireAll(exact);
    }
    const prefixes = this.#prefixes;
    if (prefixes.size === 0) return;
    if (prefixes.size <= key.length + 1) {
      for (const [p, set] of prefixes) {
        if (key.startsWith(p)) {
          prefixes.delete(p);
          fireAll(set);
        }
      }
    } else {
      for (let i = 0; i <= key.length; i++) {
        const p = i === key.length ? key : key.slice(0, i);
        const set = prefixes.get(p);
        if (set) {
          prefixes.delete(p);
          fireAll(set);
        }
      }
    }
  }

  /** Wake everyone (store abandoned). */
  notifyAll(): void {
    const sets = [...this.#keys.values(), ...this.#prefixes.values()];
    this.#keys.clear();
    this.#prefixes.clear();
    for (const s of sets) fireAll(s);
  }

  /** Number of distinct watched keys and prefixes (for tests). */
  get watchedCount(): number {
    return this.#keys.size + this.#prefixes.size;
  }
}
