// ACL replication into a secondary datacenter (consul agent/consul
// acl_replication.go, acl_replication_types.go). While a server of a
// datacenter other than `primary_datacenter` leads, it runs one loop per
// kind — policies and roles always, global tokens with
// acl.enable_token_replication — each: a blocking list of the primary's
// items (stale allowed, from the index it last saw, with the
// acl.tokens.replication token), a diff against its own tables, and the
// deletions then the upserts through its own Raft, in batches and at a
// limited rate. Local tokens of either datacenter are never replicated:
// the primary's list leaves them out and the diff never looks at ours.
//
// Consul compares a Hash field of each item; here the diff compares the
// items' content (everything but the Raft indexes, which are each
// datacenter's own), which needs no extra field and says the same thing.
// Only the diff is pure; the loop runs on the injected clock.
import type { Timer } from "../clock/clock.ts";
import { errorMessage } from "../errors.ts";
import type { AclKind, AclReadArgs, AclReplicationStatus, Rpc } from "../rpc/methods.ts";
import { aclPolicyFrom, aclRoleFrom, aclTokenFrom, type AclPolicy, type AclRole, type AclToken } from "../state/acl.ts";
import type { ServerContext } from "./context.ts";
import { raftApply } from "./context.ts";
import { encodeCommand, MessageType } from "./fsm.ts";

/** What `/v1/acl/replication` answers where no replication runs (the primary, ACLs off). */
export const noReplication: AclReplicationStatus = {
  enabled: false,
  running: false,
  sourceDatacenter: "",
  replicationType: "",
  replicatedIndex: 0,
  replicatedRoleIndex: 0,
  replicatedTokenIndex: 0,
  lastSuccessMs: 0,
  lastErrorMs: 0,
  lastErrorMessage: "",
};

type AclItem = AclToken | AclPolicy | AclRole;

/** What one round changes: IDs to delete, items to store. */
export interface AclDiff<T> {
  deletions: string[];
  upserts: T[];
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      if (k === "createIndex" || k === "modifyIndex") continue;
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = canonical(x);
    }
    return out;
  }
  return v;
}

/** An item's content without its Raft indexes, as one string: equal strings, equal items (Consul's Hash). */
export function aclContentKey(item: object): string {
  return JSON.stringify(canonical(item));
}

/**
 * Bring `local` in line with `remote` (consul diffACLPolicies, diffACLTokens):
 * an ID only local is deleted, an ID only remote is stored, an ID in both is
 * stored again when its content differs. Deletions and upserts come sorted by ID.
 */
export function diffAclItems<T extends object>(local: readonly T[], remote: readonly T[], id: (item: T) => string): AclDiff<T> {
  const mine = new Map(local.map((x) => [id(x), x]));
  const theirs = new Set<string>();
  const upserts: T[] = [];
  for (const r of [...remote].sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0))) {
    const key = id(r);
    theirs.add(key);
    const l = mine.get(key);
    if (!l || aclContentKey(l) !== aclContentKey(r)) upserts.push(r);
  }
  const deletions = [...mine.keys()].filter((k) => !theirs.has(k)).sort();
  return { deletions, upserts };
}

/** Consecutive slices of `items` whose JSON size stays under `maxBytes` (at least one item each). */
export function aclBatches<T>(items: readonly T[], maxBytes: number): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let size = 0;
  for (const x of items) {
    const n = JSON.stringify(x).length;
    if (cur.length > 0 && size + n > maxBytes) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(x);
    size += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** The SecretID a list shows to a token without acl:write. */
const hiddenSecret = "<hidden>";

interface KindSpec {
  kind: AclKind;
  /** The status field this kind's index goes to. */
  indexField: "replicatedIndex" | "replicatedRoleIndex" | "replicatedTokenIndex";
  id(item: AclItem): string;
  from(raw: unknown): AclItem | undefined;
  local(ctx: ServerContext): AclItem[];
  set: MessageType;
  del: MessageType;
}

const kinds: Record<AclKind, KindSpec> = {
  policy: {
    kind: "policy",
    indexField: "replicatedIndex",
    id: (p) => (p as AclPolicy).id,
    from: (raw) => aclPolicyFrom(raw),
    local: (ctx) => ctx.fsm.state.tables.acl_policies.all(),
    set: MessageType.ACLPolicySet,
    del: MessageType.ACLPolicyDelete,
  },
  role: {
    kind: "role",
    indexField: "replicatedRoleIndex",
    id: (r) => (r as AclRole).id,
    from: (raw) => aclRoleFrom(raw),
    local: (ctx) => ctx.fsm.state.tables.acl_roles.all(),
    set: MessageType.ACLRoleSet,
    del: MessageType.ACLRoleDelete,
  },
  token: {
    kind: "token",
    indexField: "replicatedTokenIndex",
    id: (t) => (t as AclToken).accessorId,
    from: (raw) => aclTokenFrom(raw),
    // Our own local tokens are ours: never compared, never deleted.
    local: (ctx) => ctx.fsm.state.tables.acl_tokens.all().filter((t) => !t.local),
    set: MessageType.ACLTokenSet,
    del: MessageType.ACLTokenDelete,
  },
};

export interface AclReplicationOptions {
  /** primary_datacenter. */
  primary: string;
  /** acl.enable_token_replication: global tokens too. */
  tokens: boolean;
  /** acl.tokens.replication (the agent's current one). */
  replicationToken: () => string;
  /** Where calls to the primary go (the server's router). */
  remote: () => Rpc | undefined;
  /** Rounds a second per kind, and the burst after a quiet time (Consul's ACLReplicationRate 1, ACLReplicationBurst 5). */
  roundsPerSecond?: number;
  burst?: number;
  /** Raft commands a second (Consul's ACLReplicationApplyLimit, 100). */
  appliesPerSecond?: number;
  /** Bytes of items in one command (Consul's aclBatchUpsertSize, 256 KiB). */
  batchBytes?: number;
  /** How long one blocking list may wait at the primary (Consul: the default query time, 5 minutes). */
  waitMs?: number;
}

/** Longest wait after failed rounds (Consul's aclReplicationMaxRetryBackoff, 64 s). */
const maxBackoffMs = 64_000;

/** The replication a secondary's leader runs; started and stopped with leadership. */
export class AclReplicator {
  readonly #ctx: ServerContext;
  readonly #o: Required<Omit<AclReplicationOptions, "replicationToken" | "remote">> & Pick<AclReplicationOptions, "replicationToken" | "remote">;
  readonly #status: AclReplicationStatus;
  #abort: AbortController | undefined;
  readonly #timers = new Set<Timer>();

  constructor(ctx: ServerContext, o: AclReplicationOptions) {
    this.#ctx = ctx;
    this.#o = { roundsPerSecond: 1, burst: 5, appliesPerSecond: 100, batchBytes: 256 * 1024, waitMs: 5 * 60_000, ...o };
    this.#status = { ...noReplication, enabled: true, sourceDatacenter: o.primary, replicationType: o.tokens ? "tokens" : "policies" };
  }

  get running(): boolean {
    return this.#abort !== undefined;
  }

  status(): AclReplicationStatus {
    return { ...this.#status };
  }

  /** Begin (on gaining leadership); a second call while running does nothing. */
  start(): void {
    if (this.#abort) return;
    const abort = new AbortController();
    this.#abort = abort;
    this.#status.running = true;
    this.#ctx.logger.info("ACL replication started", { primary: this.#o.primary, type: this.#status.replicationType });
    const list: AclKind[] = this.#o.tokens ? ["policy", "role", "token"] : ["policy", "role"];
    for (const kind of list) void this.#loop(kinds[kind], abort.signal);
  }

  /** End (on losing leadership, at shutdown): the blocking list in flight is abandoned. */
  stop(): void {
    if (!this.#abort) return;
    this.#abort.abort(new Error("ACL replication stopped"));
    this.#abort = undefined;
    for (const t of this.#timers) t.cancel();
    this.#timers.clear();
    this.#status.running = false;
    this.#ctx.logger.info("ACL replication stopped", { primary: this.#o.primary });
  }

  #sleep(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const onAbort = () => resolve();
      const t = this.#ctx.clock.setTimer(ms, () => {
        this.#timers.delete(t);
        signal.removeEventListener("abort", onAbort);
        resolve();
      });
      this.#timers.add(t);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  async #loop(spec: KindSpec, signal: AbortSignal): Promise<void> {
    const clock = this.#ctx.clock;
    let lastIndex = 0;
    let failures = 0;
    // A token bucket: at most roundsPerSecond rounds, `burst` at once after a quiet time.
    let allowance = this.#o.burst;
    let lastRefill = clock.now();
    while (!signal.aborted) {
      const now = clock.now();
      allowance = Math.min(this.#o.burst, allowance + ((now - lastRefill) / 1000) * this.#o.roundsPerSecond);
      lastRefill = now;
      if (allowance < 1) {
        await this.#sleep(Math.ceil(((1 - allowance) * 1000) / this.#o.roundsPerSecond), signal);
        continue;
      }
      allowance -= 1;
      try {
        lastIndex = await this.#round(spec, lastIndex, signal);
        if (signal.aborted) return;
        failures = 0;
        this.#status[spec.indexField] = lastIndex;
        this.#status.lastSuccessMs = clock.wallNow();
      } catch (err) {
        if (signal.aborted) return;
        failures++;
        lastIndex = 0;
        this.#status.lastErrorMs = clock.wallNow();
        this.#status.lastErrorMessage = errorMessage(err);
        this.#ctx.logger.warn("ACL replication round failed", { kind: spec.kind, primary: this.#o.primary, error: errorMessage(err) });
        // Back off, but try at once when the replication token changes (PUT /v1/agent/token/replication).
        const token = this.#o.replicationToken();
        const until = clock.now() + Math.min(maxBackoffMs, 1000 * 2 ** Math.min(failures - 1, 6));
        while (!signal.aborted && clock.now() < until && this.#o.replicationToken() === token) {
          await this.#sleep(Math.min(1000, until - clock.now()), signal);
        }
      }
    }
  }

  /** One round: list at the primary (blocking past `lastIndex`), diff, apply. Returns the primary's index. */
  async #round(spec: KindSpec, lastIndex: number, signal: AbortSignal): Promise<number> {
    const remote = this.#o.remote();
    if (!remote) throw new Error("this server cannot reach other datacenters");
    const args: AclReadArgs = {
      kind: spec.kind,
      op: "list",
      ...(spec.kind === "token" ? { includeLocal: false } : {}),
      query: { datacenter: this.#o.primary, token: this.#o.replicationToken(), allowStale: true, requireConsistent: false, minQueryIndex: lastIndex, maxQueryTimeMs: this.#o.waitMs },
    };
    const reply = await remote.call("ACL.Read", args, { signal });
    if (signal.aborted) return lastIndex;
    const remoteItems: AclItem[] = [];
    for (const raw of reply.items) {
      const item = spec.from(raw);
      if (!item) throw new Error(`the primary datacenter sent a malformed ACL ${spec.kind}`);
      if (spec.kind === "token" && (item as AclToken).secretId === hiddenSecret) {
        throw new Error("the replication token may not see token secrets: it needs acl:write in the primary datacenter");
      }
      // A token the primary lists as local is not ours to keep (an older primary ignores includeLocal).
      if (spec.kind === "token" && (item as AclToken).local) continue;
      remoteItems.push(item);
    }
    const { deletions, upserts } = diffAclItems(spec.local(this.#ctx), remoteItems, spec.id);
    if (deletions.length || upserts.length) {
      this.#ctx.logger.debug("ACL replication applying", { kind: spec.kind, deletions: deletions.length, upserts: upserts.length });
    }
    const pace = 1000 / this.#o.appliesPerSecond;
    const commands = [
      ...aclBatches(deletions, this.#o.batchBytes).map((ids) => encodeCommand(spec.del, { ids })),
      ...aclBatches(upserts, this.#o.batchBytes).map((items) => encodeCommand(spec.set, { items })),
    ];
    for (let i = 0; i < commands.length; i++) {
      if (signal.aborted) return lastIndex;
      if (i > 0) await this.#sleep(pace, signal);
      await raftApply(this.#ctx, commands[i]!);
    }
    // The primary's index only moves forward; one that went back is a rebuilt primary, and this round was a full sync anyway.
    return reply.meta.index;
  }
}
