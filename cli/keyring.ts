// `cairn keyring`, as consul command/keyring: list, install, use or remove
// gossip encryption keys across every member of the pools.
import { OperatorKeyring, type KeyringResponse } from "../core/api/gossip.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpClientFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  { name: "install", kind: "string", valueName: "string", usage: "Install a new encryption key. This will broadcast the new key to all members in the cluster." },
  { name: "use", kind: "string", valueName: "string", usage: "Change the primary encryption key, which is used to encrypt messages. The key must already be installed before this operation can succeed." },
  { name: "remove", kind: "string", valueName: "string", usage: "Remove the given key from the cluster. This operation may only be performed on keys which are not currently the primary key." },
  { name: "list", kind: "bool", usage: "List all keys currently in use within the cluster." },
  { name: "list-primary", kind: "bool", usage: "List all primary keys currently in use within the cluster." },
  { name: "local-only", kind: "bool", usage: "Setting this to true will force the keyring query to only hit local servers (no WAN traffic). This flag can only be set for list queries." },
  { name: "relay-factor", kind: "int", valueName: "int", usage: "Setting this to a non-zero value will cause nodes to relay their response to the operation through this many randomly-chosen other nodes in the cluster. The maximum allowed value is 5." },
];

const HELP = `
Usage: cairn keyring [options]

  Manages encryption keys used for gossip messages. Gossip encryption is
  optional. When enabled, this command may be used to examine active encryption
  keys in the cluster, add new keys, and remove old ones. When combined, this
  functionality provides the ability to perform key rotation cluster-wide,
  without disrupting the cluster.

  All operations performed by this command can only be run against server nodes,
  and affect both the LAN and WAN keyrings in lock-step.

  All variations of the keyring command return 0 if all nodes reply and there
  are no errors. If any node fails to reply or reports failure, the exit code
  will be 1.
`;

/** Consul's handleList output. */
export function formatKeyringList(responses: readonly KeyringResponse[], primary = false): string {
  let out = "";
  for (const r of responses) {
    let pool = `${r.Datacenter} (LAN)`;
    if (r.Segment) pool += ` [${r.Segment}]`;
    if (r.WAN) pool = "WAN";
    out += `\n${pool}:\n`;
    const keys = primary ? r.PrimaryKeys ?? {} : r.Keys ?? {};
    for (const [key, num] of Object.entries(keys)) out += `  ${key} [${num}/${r.NumNodes}]\n`;
  }
  return out;
}

export const keyringCommand: Command = {
  name: "keyring",
  synopsis: "Manages gossip layer encryption keys",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(keyringCommand, args, flags, io);
    if (typeof p === "number") return p;
    const install = str(p, "install");
    const use = str(p, "use");
    const remove = str(p, "remove");
    const list = bool(p, "list");
    const listPrimary = bool(p, "list-primary");
    const actions = [list, listPrimary, install !== "", use !== "", remove !== ""].filter(Boolean).length;
    if (actions > 1) {
      io.stderr("Only a single action is allowed\n");
      return 1;
    }
    if (actions === 0) {
      io.stderr(keyringCommand.help());
      return 1;
    }
    const relay = p.values.get("relay-factor");
    if (typeof relay === "number" && (relay < 0 || relay > 5)) {
      io.stderr("Error parsing relay factor: relay factor must be between 0 and 5\n");
      return 1;
    }
    if (bool(p, "local-only") && !list && !listPrimary) {
      io.stderr("Cannot use -local-only with anything other than -list or -list-primary\n");
      return 1;
    }
    const api = new OperatorKeyring(apiClientFromFlags(p, io));
    try {
      if (list || listPrimary) {
        io.stdout(`==> Gathering installed encryption keys...\n`);
        const r = await api.list({ localOnly: bool(p, "local-only") });
        io.stdout(formatKeyringList(r, listPrimary));
      } else if (install) {
        io.stdout("==> Installing new gossip encryption key...\n");
        await api.install(install);
      } else if (use) {
        io.stdout("==> Changing primary gossip encryption key...\n");
        await api.use(use);
      } else {
        io.stdout("==> Removing gossip encryption key...\n");
        await api.remove(remove);
      }
    } catch (err) {
      io.stderr(`error: ${apiErrorText(err)}\n`);
      return 1;
    }
    return 0;
  },
};
