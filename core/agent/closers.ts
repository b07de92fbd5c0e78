// The agent's closer stack: every component that starts pushes how to stop
// it; stopping pops them in reverse order, so a component never outlives
// what it uses. A start that fails half way closes what already started
// (sockets included) through the same stack.
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";

export class Closers {
  readonly #stack: Array<{ name: string; close: () => void | Promise<void> }> = [];
  readonly #logger: Logger;
  #closed = false;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Register how to stop what just started. */
  add(name: string, close: () => void | Promise<void>): void {
    if (this.#closed) throw new TypeError(`Cannot add "${name}": the closers already ran`);
    this.#stack.push({ name, close });
  }

  /** Names in the order they will close (for tests). */
  get order(): string[] {
    return this.#stack.map((c) => c.name).reverse();
  }

  /**
   * Close everything, last started first. Every closer runs even when one
   * fails; the first failure is thrown once all have run. Idempotent.
   */
  async closeAll(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    let first: unknown;
    for (const c of this.#stack.reverse()) {
      try {
        await c.close();
      } catch (err) {
        this.#logger.error("failed to stop a component", { component: c.name, error: errorMessage(err) });
        first ??= err;
      }
    }
    this.#stack.length = 0;
    if (first !== undefined) throw first;
  }
}
