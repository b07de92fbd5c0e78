// `cairn acl token create|list|read|delete`, as consul command/acl/token/*.
import { Acl, type AclTokenJson } from "../core/api/acl.ts";
import { formatFlag, outputFormat, prettyToken } from "./_acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

function formatOf(p: ParsedFlags, io: CliIo): "pretty" | "json" | undefined {
  const f = outputFormat(str(p, "format"));
  if (f === "pretty" || f === "json") return f;
  io.stderr(`${f}\n`);
  return undefined;
}

function show(io: CliIo, format: "pretty" | "json", t: AclTokenJson): void {
  io.stdout(format === "json" ? `${JSON.stringify(t, null, 4)}\n` : prettyToken(t));
}

/** An AccessorID from -accessor-id / -id: exact, or a unique prefix. */
async function findAccessorId(acl: Acl, given: string): Promise<string> {
  if (given === "") throw new Error("Must specify the -accessor-id parameter");
  if (given === "anonymous") return "00000000-0000-0000-0000-000000000002";
  if (given.length === 36) return given;
  const matches = (await acl.tokenList()).filter((t) => t.AccessorID.startsWith(given));
  if (matches.length === 0) throw new Error(`No such token ID with prefix: ${given}`);
  if (matches.length > 1) throw new Error(`Multiple tokens with ID prefix: ${given}`);
  return matches[0]!.AccessorID;
}

/** The AccessorID the flags name, or undefined once the reason is on stderr. */
async function accessorId(acl: Acl, p: ParsedFlags, io: CliIo): Promise<string | undefined> {
  try {
    return await findAccessorId(acl, str(p, "accessor-id") || str(p, "id"));
  } catch (err) {
    io.stderr(`Error determining token ID: ${apiErrorText(err)}\n`);
    return undefined;
  }
}

const accessorFlags: FlagSpec[] = [
  { name: "accessor-id", kind: "string", valueName: "value", usage: "The Accessor ID of the token. It may be specified as a unique ID prefix but will error if the prefix matches multiple token Accessor IDs" },
  { name: "id", kind: "string", valueName: "value", usage: "Use -accessor-id instead (the older name of the flag)." },
];

const createFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  { name: "accessor", kind: "string", valueName: "value", usage: "Create the token with this Accessor ID" },
  { name: "secret", kind: "string", valueName: "value", usage: "Create the token with this Secret ID" },
  { name: "description", kind: "string", valueName: "value", usage: "A description of the token" },
  { name: "local", kind: "bool", usage: "Create this as a datacenter local token" },
  { name: "policy-id", kind: "list", valueName: "value", usage: "ID of a policy to use for this token. May be specified multiple times" },
  { name: "policy-name", kind: "list", valueName: "value", usage: "Name of a policy to use for this token. May be specified multiple times" },
  { name: "role-id", kind: "list", valueName: "value", usage: "ID of a role to use for this token. May be specified multiple times" },
  { name: "role-name", kind: "list", valueName: "value", usage: "Name of a role to use for this token. May be specified multiple times" },
  { name: "service-identity", kind: "list", valueName: "value", usage: "Name of a service identity to use for this token. May be specified multiple times. Format is the SERVICENAME or SERVICENAME:DATACENTER1,DATACENTER2,..." },
  { name: "node-identity", kind: "list", valueName: "value", usage: "Name of a node identity to use for this token. May be specified multiple times. Format is NODENAME:DATACENTER" },
  { name: "expires-ttl", kind: "string", valueName: "value", usage: "Duration of time this token should be valid for" },
];

export const aclTokenCreate: Command = {
  name: "acl token create",
  synopsis: "Create an ACL token",
  help: () => formatHelp(`
Usage: cairn acl token create [options]

  When creating a new token policies may be linked using either the -policy-id
  or the -policy-name options. When specifying policies by IDs you may use a
  unique prefix of the UUID as a shortcut for specifying the entire UUID.

  Create a new token:

          $ cairn acl token create -description "Replication token" \\
                                   -policy-id b52fc3de-5 \\
                                   -policy-name "acl-replication"
`, createFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenCreate, args, createFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const t: Record<string, unknown> = { Description: str(p, "description"), Local: bool(p, "local") };
    if (str(p, "accessor")) t.AccessorID = str(p, "accessor");
    if (str(p, "secret")) t.SecretID = str(p, "secret");
    const policies = [...list(p, "policy-id").map((ID) => ({ ID })), ...list(p, "policy-name").map((Name) => ({ Name }))];
    if (policies.length) t.Policies = policies;
    const roles = [...list(p, "role-id").map((ID) => ({ ID })), ...list(p, "role-name").map((Name) => ({ Name }))];
    if (roles.length) t.Roles = roles;
    const si = list(p, "service-identity").map((s) => {
      const [name, dcs] = s.split(":", 2) as [string, string | undefined];
      return dcs ? { ServiceName: name, Datacenters: dcs.split(",").filter((d) => d !== "") } : { ServiceName: name };
    });
    if (si.length) t.ServiceIdentities = si;
    const ni: { NodeName: string; Datacenter: string }[] = [];
    for (const s of list(p, "node-identity")) {
      const [name, dc] = s.split(":", 2);
      if (!name || !dc) {
        io.stderr(`Malformed -node-identity argument: ${JSON.stringify(s)}\n`);
        return 1;
      }
      ni.push({ NodeName: name, Datacenter: dc });
    }
    if (ni.length) t.NodeIdentities = ni;
    if (str(p, "expires-ttl")) t.ExpirationTTL = str(p, "expires-ttl");
    try {
      show(io, format, await new Acl(apiClientFromFlags(p, io)).tokenCreate(t as Partial<AclTokenJson>));
      return 0;
    } catch (err) {
      io.stderr(`Failed to create new token: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const readFlags: readonly FlagSpec[] = [...httpFlags, formatFlag, ...accessorFlags, { name: "self", kind: "bool", usage: "Indicates that the current HTTP token should be read by secret ID instead of expecting a -accessor-id option" }];

export const aclTokenRead: Command = {
  name: "acl token read",
  synopsis: "Read an ACL token",
  help: () => formatHelp(`
Usage: cairn acl token read [options] -accessor-id TOKENID

  This command will retrieve and print out the details of
  a single token.

  Using a partial ID:

          $ cairn acl token read -accessor-id 4be56c77-82

  Using the full ID:

          $ cairn acl token read -accessor-id 4be56c77-8244-4c7d-b08c-667b8c71baed
`, readFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenRead, args, readFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    if (bool(p, "self")) {
      try {
        show(io, format, await acl.tokenReadSelf());
        return 0;
      } catch (err) {
        io.stderr(`Error reading token: ${apiErrorText(err)}\n`);
        return 1;
      }
    }
    const id = await accessorId(acl, p, io);
    if (id === undefined) return 1;
    try {
      show(io, format, await acl.tokenRead(id));
      return 0;
    } catch (err) {
      io.stderr(`Error reading token "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const listFlags: readonly FlagSpec[] = [...httpFlags, formatFlag];

export const aclTokenList: Command = {
  name: "acl token list",
  synopsis: "List ACL tokens",
  help: () => formatHelp(`
Usage: cairn acl token list [options]

  List all the ACL tokens

          $ cairn acl token list
`, listFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenList, args, listFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    try {
      const tokens = await new Acl(apiClientFromFlags(p, io)).tokenList();
      io.stdout(format === "json" ? `${JSON.stringify(tokens, null, 4)}\n` : tokens.map((t) => prettyToken(t)).join("\n"));
      return 0;
    } catch (err) {
      io.stderr(`Failed to retrieve the token list: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const deleteFlags: readonly FlagSpec[] = [...httpFlags, ...accessorFlags];

export const aclTokenDelete: Command = {
  name: "acl token delete",
  synopsis: "Delete an ACL token",
  help: () => formatHelp(`
Usage: cairn acl token delete [options] -accessor-id TOKEN

  Deletes an ACL token by providing either the ID or a unique ID prefix.

      Delete by prefix:

          $ cairn acl token delete -accessor-id b6b85

      Delete by full ID:

          $ cairn acl token delete -accessor-id b6b856da-5193-4e78-845a-7d61ca8371ba
`, deleteFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenDelete, args, deleteFlags, io);
    if (typeof p === "number") return p;
    const acl = new Acl(apiClientFromFlags(p, io));
    const id = await accessorId(acl, p, io);
    if (id === undefined) return 1;
    try {
      await acl.tokenDelete(id);
    } catch (err) {
      io.stderr(`Error deleting token "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`Token "${id}" deleted successfully\n`);
    return 0;
  },
};
