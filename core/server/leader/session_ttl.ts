// Session TTL timers on the leader (consul agent/consul/session_ttl.go). A
// session with a TTL is destroyed when it is not renewed within TTL × 2
// (Consul's SessionTTLMultiplier). Timers run only on the leader: a new
// leader arms every TTL session afresh at 2 × TTL, and a server that loses
// leadership drops its timers. Expiry goes through Raft like any destroy, with
// the leader's wall clock for the lock delay. The leader duties
// (leader.ts) call sync() on every leadership change and tick.

import type { Timer } from "../../clock/clock.ts";
import { parseDuration } from "../../config/duration.ts";
import { errorMessage } from "../../errors.ts";
import type { ServerContext } from "../context.ts";
import { raftApply } from "../context.ts";
import { encodeCommand, MessageType } from "../fsm.ts";

/** Consul structs.SessionTTLMultiplier. */
export const sessionTtlMultiplier = 2;

export class SessionTimers {
  readonly #ctx: ServerContext;
  readonly #timers = new Map<string, Timer>();
  #leading = false;
  /** Sessions destroyed by expiry (for tests and metrics). */
  expired = 0;

  constructor(ctx: ServerContext) {
    this.#ctx = ctx;
  }

  /** Number of armed timers. */
  get size(): number {
    return this.#timers.size;
  }

  /** Arm (or re-arm) the timer of one session; ttl is its Go duration text. No-op off the leader or without a TTL. */
  reset(id: string, ttl: string): void {
    this.sync();
    if (!this.#leading) return;
    const ms = parseDuration(ttl);
    if (ms === undefined || ms <= 0) return;
    this.#timers.get(id)?.cancel();
    this.#timers.set(id, this.#ctx.clock.setTimer(ms * sessionTtlMultiplier, () => this.#expire(id)));
  }

  clear(id: string): void {
    this.#timers.get(id)?.cancel();
    this.#timers.delete(id);
  }

  /** Follow leadership: arm every TTL session when we became leader, drop all timers when we stopped being it. */
  sync(): void {
    const leader = this.#ctx.consensus.isLeader();
    if (leader === this.#leading) return;
    this.#leading = leader;
    if (!leader) {
      for (const t of this.#timers.values()) t.cancel();
      this.#timers.clear();
      return;
    }
    for (const s of this.#ctx.fsm.state.tables.sessions.all()) if (s.ttl !== "") this.reset(s.id, s.ttl);
  }

  stop(): void {
    for (const t of this.#timers.values()) t.cancel();
    this.#timers.clear();
    this.#leading = false;
  }

  #expire(id: string): void {
    this.#timers.delete(id);
    if (!this.#ctx.consensus.isLeader()) return;
    if (!this.#ctx.fsm.state.tables.sessions.get(id)) return;
    const command = encodeCommand(MessageType.Session, { op: "destroy", id, nowMs: this.#ctx.clock.wallNow() });
    this.expired++;
    raftApply(this.#ctx, command).then(
      () => this.#ctx.logger.debug("session TTL expired", { session: id }),
      (err) => this.#ctx.logger.warn("failed to invalidate expired session", { session: id, error: errorMessage(err) }),
    );
  }
}
