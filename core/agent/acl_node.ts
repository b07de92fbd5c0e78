// `acl {}` at the agent: what the servers get (the bootstrap reset file, the
// initial management token, random IDs), the agent's own tokens (default,
// agent; `PUT /v1/agent/token/:type`, kept in <data-dir>/acl-tokens.json
// with enable_token_persistence, as Consul's agent/token/persistence.go),
// and the HTTP edge's authorizer with its token cache.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Clock } from "../clock/clock.ts";
import type { AgentConfig } from "../config/types.ts";
import { writeFileDurableSync } from "../durable_node.ts";
import { errorMessage } from "../errors.ts";
import type { AgentTokens } from "../http/acl.ts";
import { AclRouteAuthorizer, type DownPolicy } from "../http/acl_authorizer.ts";
import type { Logger } from "../log/logger.ts";
import type { Rpc } from "../rpc/methods.ts";
import type { AclServerConfig } from "../server/acl.ts";
import { randomUUID } from "../random_node.ts";

/** Consul's file: write the reset index Consul printed into it to bootstrap once more. */
export const aclBootstrapResetFile = "acl-bootstrap-reset";
const tokensFile = "acl-tokens.json";

/** What a server's ACL endpoints need from this agent; undefined when ACLs are off. */
export function aclServerConfig(config: AgentConfig, logger: Logger): AclServerConfig | undefined {
  const acl = config.acl;
  if (!acl?.enabled) return undefined;
  const resetPath = config.dataDir ? join(config.dataDir, aclBootstrapResetFile) : "";
  return {
    enabled: true,
    defaultPolicy: acl.defaultPolicy === "deny" ? "deny" : "allow",
    enableKeyListPolicy: acl.enableKeyListPolicy,
    initialManagement: acl.tokens.initialManagement || undefined,
    uuid: randomUUID,
    primaryDatacenter: config.primaryDatacenter,
    enableTokenReplication: acl.enableTokenReplication,
    // The agent's token store replaces this with its own (PUT /v1/agent/token/replication).
    replicationToken: () => acl.tokens.replication,
    tokenTtlMs: Math.max(0, acl.tokenTtlMs),
    downPolicy: acl.downPolicy as DownPolicy,
    readBootstrapReset: () => {
      if (!resetPath) return undefined;
      let text: string;
      try {
        text = readFileSync(resetPath, "utf8");
      } catch {
        return undefined;
      }
      const n = Number(text.trim());
      if (!Number.isSafeInteger(n) || n < 0) {
        logger.warn("ignoring the ACL bootstrap reset file: it does not hold an index", { file: resetPath });
        return undefined;
      }
      return n;
    },
    clearBootstrapReset: () => {
      if (!resetPath) return;
      try {
        rmSync(resetPath, { force: true });
      } catch (err) {
        logger.warn("cannot remove the ACL bootstrap reset file", { file: resetPath, error: errorMessage(err) });
      }
    },
  };
}

const legacyNames: Record<string, string> = {
  acl_token: "default",
  acl_agent_token: "agent",
  acl_agent_master_token: "agent_recovery",
  agent_master: "agent_recovery",
  acl_replication_token: "replication",
};

/** The agent's tokens: from config, replaced by `PUT /v1/agent/token/:type`, persisted when asked. */
export class AgentTokenStore implements AgentTokens {
  readonly #tokens = new Map<string, string>();
  readonly #path: string;
  readonly #logger: Logger;
  /** Called after a change (the edge authorizer forgets its cache). */
  onChange: (() => void) | undefined;

  constructor(config: AgentConfig, logger: Logger) {
    this.#logger = logger;
    const t = config.acl?.tokens;
    if (t?.default) this.#tokens.set("default", t.default);
    if (t?.agent) this.#tokens.set("agent", t.agent);
    if (t?.dns) this.#tokens.set("dns", t.dns);
    if (t?.replication) this.#tokens.set("replication", t.replication);
    if (t?.agentRecovery) this.#tokens.set("agent_recovery", t.agentRecovery);
    if (t?.configFileServiceRegistration) this.#tokens.set("config_file_service_registration", t.configFileServiceRegistration);
    this.#path = config.acl?.enableTokenPersistence && config.dataDir ? join(config.dataDir, tokensFile) : "";
    if (this.#path) this.#load();
  }

  #load(): void {
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(this.#path, "utf8"));
    } catch {
      return;
    }
    if (typeof raw !== "object" || raw === null) return;
    // Consul's persisted field names, which are the token types.
    for (const type of ["default", "agent", "dns", "agent_recovery", "replication", "config_file_service_registration"]) {
      const v = (raw as Record<string, unknown>)[type];
      if (typeof v === "string" && v !== "") this.#tokens.set(type, v);
    }
  }

  get(type: "default" | "agent" | "dns" | "replication" | "agent_recovery" | "config_file_service_registration"): string {
    // The agent's own calls and DNS fall back to the default token, as Consul's AgentToken() and DNSToken().
    if (type === "agent" || type === "dns") return this.#tokens.get(type) || this.#tokens.get("default") || "";
    return this.#tokens.get(type) ?? "";
  }

  async set(type: string, token: string): Promise<void> {
    const name = legacyNames[type] ?? type;
    this.#tokens.set(name, token);
    this.onChange?.();
    if (!this.#path) return;
    const out: Record<string, string> = {};
    for (const [k, v] of this.#tokens) out[k] = v;
    try {
      writeFileDurableSync(this.#path, JSON.stringify(out), { mode: 0o600 });
    } catch (err) {
      this.#logger.error("cannot persist the agent's ACL tokens", { file: this.#path, error: errorMessage(err) });
      throw err;
    }
    await Promise.resolve();
  }
}

/** The edge authorizer: resolves tokens through the servers, cached for acl.token_ttl. */
export function aclRouteAuthorizer(config: AgentConfig, o: { rpc: Rpc; clock: Clock; tokens: AgentTokenStore }): AclRouteAuthorizer {
  const acl = config.acl;
  const authz = new AclRouteAuthorizer({
    resolve: (secret) => o.rpc.call("ACL.Resolve", { secret }),
    now: () => o.clock.now(),
    tokenTtlMs: Math.max(0, acl.tokenTtlMs),
    downPolicy: acl.downPolicy as DownPolicy,
    enableKeyListPolicy: acl.enableKeyListPolicy,
    defaultToken: () => o.tokens.get("default"),
    agentRecoveryToken: () => o.tokens.get("agent_recovery"),
    nodeName: config.nodeName,
  });
  o.tokens.onChange = () => authz.clear();
  return authz;
}

/** The agent's own calls (anti-entropy) carry the agent token when they name none. */
export function withAgentToken(rpc: Rpc, token: () => string): Rpc {
  return {
    call(method, args, options) {
      const t = token();
      if (!t || typeof args !== "object" || args === null) return rpc.call(method, args, options);
      const a = args as { token?: string; query?: { token?: string } };
      let next: typeof args = args;
      if (a.query && !a.query.token) next = { ...args, query: { ...a.query, token: t } } as typeof args;
      else if (!a.query && a.token === undefined) next = { ...args, token: t } as typeof args;
      return rpc.call(method, next, options);
    },
  };
}

/**
 * On a new leader: store the built-in policies and the anonymous and
 * initial management tokens, retrying every second while it leads (a
 * fresh leader may not accept writes at once).
 */
export function initializeAclsSoon(server: { acl: unknown; consensus: { isLeader(): boolean }; initializeAcls(): Promise<boolean> }, clock: Clock, logger: Logger): void {
  if (!server.acl) return;
  let attempts = 0;
  const attempt = () => {
    if (!server.consensus.isLeader() || attempts++ > 60) return;
    server.initializeAcls().then(
      () => {},
      (err: unknown) => {
        logger.warn("cannot initialize ACLs yet; will retry", { error: errorMessage(err) });
        clock.setTimer(1_000, attempt);
      },
    );
  };
  attempt();
}
