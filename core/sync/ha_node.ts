// High availability for `cairn sync`: instances of one cluster elect a
// leader with a cairn session lock on <kv_path>leader/<cluster name>
// (Consul's lock recipe: a TTL session, `?acquire=`, the holder's API
// address as the value). Only the leader starts runs; followers keep their
// watchers warm and redirect the API to the leader's address. A leader
// renews its session every TTL/3 and stops starting runs once it has not
// renewed for TTL/2, well before the servers could give the lock away
// (they wait TTL × 2).
import type { ApiClient } from "../api/client.ts";
import { decodeBase64 } from "../api/base64.ts";
import type { Clock, Timer } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { Logger } from "../log/logger.ts";
import { sleep } from "../clock/sleep.ts";

export interface ElectorOptions {
  client: ApiClient;
  clock: Clock;
  logger: Logger;
  key: string;
  ttlMs: number;
  /** This instance's API address (what followers redirect to). */
  address: string;
  onLeader(): Promise<void> | void;
  onFollower(): void;
}

export class SyncElector {
  readonly #o: ElectorOptions;
  readonly #stop = new AbortController();
  #session?: string;
  #isLeader = false;
  #leaderAddress = "";
  #lastRenewOk = 0;
  #renewTimer?: Timer;
  #loop?: Promise<void>;

  constructor(options: ElectorOptions) {
    if (options.ttlMs < 10_000) throw new RangeError("high_availability leader_election ttl must be at least 10s (the servers' minimum session TTL)");
    this.#o = options;
  }

  get isLeader(): boolean {
    return this.#isLeader;
  }

  /** For the API: undefined when this instance leads, else the leader's address ("" when unknown). */
  leaderAddress(): string | undefined {
    return this.#isLeader ? undefined : this.#leaderAddress;
  }

  start(): void {
    this.#renewTimer = this.#o.clock.setTimer(this.#o.ttlMs / 3, () => void this.#renew());
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#stop.abort();
    this.#renewTimer?.cancel();
    await this.#loop?.catch(() => {});
    if (this.#session) {
      // Leaving on purpose: give the lock up at once.
      await this.#o.client.session.destroy(this.#session).catch(() => {});
    }
  }

  #stepDown(why: string): void {
    if (!this.#isLeader) return;
    this.#isLeader = false;
    this.#o.logger.warn("no longer the leader: runs stop starting", { reason: why });
    this.#o.onFollower();
  }

  async #renew(): Promise<void> {
    if (this.#stop.signal.aborted) return;
    const sid = this.#session;
    if (sid) {
      try {
        const s = await this.#o.client.session.renew(sid);
        if (s === null) {
          this.#session = undefined;
          this.#stepDown("session expired");
        } else {
          this.#lastRenewOk = this.#o.clock.now();
        }
      } catch (err) {
        this.#o.logger.warn("session renew failed", { error: errorMessage(err) });
      }
      if (this.#isLeader && this.#o.clock.now() - this.#lastRenewOk > this.#o.ttlMs / 2) this.#stepDown("session not renewed for TTL/2");
    }
    if (!this.#stop.signal.aborted) this.#renewTimer = this.#o.clock.setTimer(this.#o.ttlMs / 3, () => void this.#renew());
  }

  async #run(): Promise<void> {
    const { client, key } = this.#o;
    let index = 0;
    while (!this.#stop.signal.aborted) {
      try {
        if (!this.#session) {
          this.#session = await client.session.create({ Name: `cairn-sync ${key}`, TTL: `${Math.round(this.#o.ttlMs / 1000)}s`, Behavior: "release", LockDelay: "0s" });
          this.#lastRenewOk = this.#o.clock.now();
        }
        const res = await client.request({ method: "GET", path: `/v1/kv/${key}`, query: { waitIndex: index, waitTimeMs: this.#o.ttlMs, signal: this.#stop.signal }, accept: [404] });
        index = res.meta.lastIndex < index ? 0 : res.meta.lastIndex;
        const entry = res.status === 404 ? undefined : ((JSON.parse(res.text) as { Session?: string; Value?: string | null }[])[0]);
        const holder = entry?.Session;
        if (holder && holder === this.#session) {
          if (!this.#isLeader) await this.#becomeLeader();
          continue;
        }
        if (holder) {
          this.#stepDown("another instance holds the lock");
          this.#leaderAddress = entry?.Value ? new TextDecoder().decode(decodeBase64(entry.Value) ?? new Uint8Array()) : "";
          continue;
        }
        this.#stepDown("the lock is free");
        this.#leaderAddress = "";
        const got = await client.request({ method: "PUT", path: `/v1/kv/${key}`, params: { acquire: this.#session }, body: this.#o.address });
        if (got.text.trim() === "true") await this.#becomeLeader();
        else await this.#sleep(500); // lock delay or a race: look again shortly
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        this.#o.logger.warn("leader election: request failed, retrying", { error: errorMessage(err) });
        if (String((err as Error)?.message ?? "").includes("invalid session") || String(err).includes("Session")) this.#session = undefined;
        await this.#sleep(1_000);
      }
    }
  }

  async #becomeLeader(): Promise<void> {
    this.#isLeader = true;
    this.#leaderAddress = this.#o.address;
    this.#o.logger.info("elected leader", { key: this.#o.key });
    await this.#o.onLeader();
  }

  #sleep(ms: number): Promise<void> {
    return sleep(this.#o.clock, ms, this.#stop.signal);
  }
}
