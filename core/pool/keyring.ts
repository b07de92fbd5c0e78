// Keyring operations across pools (serf key_manager.go, Consul
// KeyringOperation): install, use, remove and list gossip keys everywhere.

import { BadRequestError } from "../errors.ts";
import { decodeSerfMessage, encodeSerfMessage } from "../gossip/wire/serf.ts";
import { InternalQuery } from "../gossip/wire/messages.ts";
import { keyFromBase64 } from "../gossip/wire/crypto.ts";
import type { AgentKeyring, KeyringPoolResponse } from "./types.ts";
import { SerfPool } from "./pool.ts";

// ---------------------------------------------------------------------------
// Keyring operations across pools (serf key_manager.go, Consul KeyringOperation)

type KeyOp = "list" | "install" | "use" | "remove";

const keyQueryName: Record<KeyOp, string> = {
  list: InternalQuery.listKeys,
  install: InternalQuery.installKey,
  use: InternalQuery.useKey,
  remove: InternalQuery.removeKey,
};

/** One pool's keyring operation: ask every member, count keys and failures. */
export async function keyringPoolOperation(pool: SerfPool, op: KeyOp, key?: string): Promise<KeyringPoolResponse> {
  const base = { wan: pool.name === "wan", datacenter: pool.datacenter, segment: "" };
  let raw: Uint8Array = new Uint8Array(0);
  if (op !== "list") {
    const k = keyFromBase64(key ?? "");
    if (!k) throw new KeyringInputError(`Invalid key: expected base64 of 16, 24 or 32 bytes`);
    raw = k;
  }
  const numNodes = pool.members().filter((m) => m.status === "alive").length;
  const payload = encodeSerfMessage({ type: "keyRequest", body: { key: raw } });
  const responses = await pool.query(keyQueryName[op], payload, { expect: numNodes });
  const keys: Record<string, number> = {};
  const primaryKeys: Record<string, number> = {};
  const messages: Record<string, string> = {};
  let numErr = 0;
  for (const [from, bytes] of responses) {
    const d = bytes ? decodeSerfMessage(bytes) : undefined;
    if (!d || !d.ok || d.value.type !== "keyResponse") {
      messages[from] = "Failed to decode key response";
      numErr++;
      continue;
    }
    const r = d.value.body;
    if (!r.result) {
      messages[from] = r.message;
      numErr++;
    } else if (r.message) {
      messages[from] = r.message;
    }
    if (op === "list") {
      for (const k of r.keys ?? []) keys[k] = (keys[k] ?? 0) + 1;
      if (r.primaryKey) primaryKeys[r.primaryKey] = (primaryKeys[r.primaryKey] ?? 0) + 1;
    }
  }
  const numResp = responses.size;
  let error: string | undefined;
  if (numResp !== numNodes) error = `${numResp - numErr}/${numNodes} nodes reported success`;
  else if (numErr > 0) error = `${numErr}/${numNodes} nodes reported failure`;
  return { ...base, keys, primaryKeys, numNodes, messages, ...(error ? { error } : {}) };
}

/** A bad key given to a keyring operation: the HTTP API answers 400 with its text. */
export class KeyringInputError extends BadRequestError {}

export function agentKeyring(pools: () => SerfPool[]): AgentKeyring {
  const run = async (op: KeyOp, key?: string, localOnly = false): Promise<KeyringPoolResponse[]> => {
    // Consul answers WAN first, then LAN.
    const list = pools().slice().sort((a, b) => (a.name === "wan" ? -1 : b.name === "wan" ? 1 : 0)).filter((p) => !localOnly || p.name === "lan");
    const out: KeyringPoolResponse[] = [];
    for (const p of list) out.push(await keyringPoolOperation(p, op, key));
    return out;
  };
  return {
    get enabled() {
      return pools().some((p) => p.keyring !== undefined);
    },
    list: (options) => run("list", undefined, options?.localOnly),
    install: (key) => run("install", key),
    use: (key) => run("use", key),
    remove: (key) => run("remove", key),
  };
}
