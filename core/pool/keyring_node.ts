// Gossip keyring files (Serf's KeyringFile, Consul's serf/local.keyring and
// serf/remote.keyring): a JSON array of base64 keys, the primary first.
// Consul writes the file from -encrypt on the first start; later starts use
// the file, with a warning when -encrypt is also given and differs.
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import { writeFileDurableSync } from "../durable_node.ts";
import { ConfigError } from "../errors.ts";
import type { Logger } from "../log/mod.ts";
import { Keyring, keyFromBase64, keyToBase64 } from "../gossip/wire/crypto.ts";

/** Parse a keyring file's text; throws ConfigError naming the file on bad content. */
export function parseKeyringText(text: string, file: string): Keyring {
  let keys: unknown;
  try {
    keys = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`Invalid keyring file "${file}": ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(keys) || keys.length === 0 || !keys.every((k) => typeof k === "string")) {
    throw new ConfigError(`Invalid keyring file "${file}": expected a non-empty JSON array of base64 keys`);
  }
  const raw = (keys as string[]).map((k) => keyFromBase64(k));
  const bad = raw.findIndex((k) => k === undefined);
  if (bad >= 0) throw new ConfigError(`Invalid keyring file "${file}": key ${bad + 1} is not base64 of 16, 24 or 32 bytes`);
  return new Keyring(raw as Uint8Array[]);
}

/** Write the keyring durably (core/durable_node.ts), 0600. */
export function saveKeyringFile(file: string, ring: Keyring): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileDurableSync(file, JSON.stringify(ring.keys.map(keyToBase64), null, 2), { mode: 0o600 });
}

/**
 * The keyring for one pool: from `file` when it exists, else from `encrypt`
 * (written to `file` when one is given). Undefined = no encryption.
 */
export function loadKeyring(options: { file?: string; encrypt: string; logger: Logger; pool: string }): Keyring | undefined {
  const { file, encrypt, logger } = options;
  if (file && existsSync(file)) {
    const ring = parseKeyringText(readFileSync(file, "utf8"), file);
    if (encrypt !== "" && encrypt !== keyToBase64(ring.primaryKey)) {
      logger.warn(`WARNING: ${options.pool} keyring exists but -encrypt given, using keyring`, { file });
    }
    return ring;
  }
  if (encrypt === "") return undefined;
  const key = keyFromBase64(encrypt);
  if (!key) throw new ConfigError("Invalid encrypt key: expected base64 of 16, 24 or 32 bytes", { field: "encrypt" });
  const ring = new Keyring([key]);
  if (file) saveKeyringFile(file, ring);
  return ring;
}
