// `cairn acl token create|list|read|update|clone|delete`, as consul command/acl/token/*.
import { Acl, type AclLinkJson, type AclTokenJson } from "../core/api/acl.ts";
import { formatFlag, formatOf, identitiesOf, nodeIdentitiesFrom, policyIdFromPartial, prettyToken, roleIdFromPartial, serviceIdentitiesFrom } from "./_acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

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
    const ids = identitiesOf(io, () => ({ si: serviceIdentitiesFrom(list(p, "service-identity")), ni: nodeIdentitiesFrom(list(p, "node-identity")) }));
    if (!ids) return 1;
    if (ids.si.length) t.ServiceIdentities = ids.si;
    if (ids.ni.length) t.NodeIdentities = ids.ni;
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

/** The Accessor ID from -accessor-id, else the deprecated -id (with Consul's warning); undefined once the refusal is on stderr. */
function accessorFlag(p: ParsedFlags, io: CliIo, verb: string): string | undefined {
  const given = str(p, "accessor-id");
  if (given !== "") return given;
  if (str(p, "id") !== "") {
    io.stderr("Use the -accessor-id parameter to specify token by Accessor ID\n");
    return str(p, "id");
  }
  io.stderr(`Cannot ${verb} a token without specifying the -accessor-id parameter\n`);
  return undefined;
}

/** Links named by -X-name (as given: the servers resolve names) and -X-id (a unique prefix resolved here). */
async function linksFrom(names: readonly string[], ids: readonly string[], resolve: (partial: string) => Promise<string>): Promise<AclLinkJson[]> {
  const out: AclLinkJson[] = names.map((Name) => ({ Name }));
  for (const id of ids) out.push({ ID: await resolve(id) });
  return out;
}

/** `links` plus those of `more` not already there (by name or by ID). */
function mergeLinks(links: readonly AclLinkJson[], more: readonly AclLinkJson[]): AclLinkJson[] {
  const out = [...links];
  for (const l of more) if (!out.some((x) => (l.ID !== undefined ? x.ID === l.ID : x.Name === l.Name))) out.push(l);
  return out;
}

const updateFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  ...accessorFlags,
  { name: "description", kind: "string", valueName: "value", usage: "A description of the token" },
  { name: "policy-id", kind: "list", valueName: "value", usage: "ID of a policy to use for this token. Overwrites existing policies. May be specified multiple times" },
  { name: "policy-name", kind: "list", valueName: "value", usage: "Name of a policy to use for this token. Overwrites existing policies. May be specified multiple times" },
  { name: "append-policy-id", kind: "list", valueName: "value", usage: "ID of a policy to add to this token. The token retains existing policies. May be specified multiple times" },
  { name: "append-policy-name", kind: "list", valueName: "value", usage: "Name of a policy to add to this token. The token retains existing policies. May be specified multiple times" },
  { name: "role-id", kind: "list", valueName: "value", usage: "ID of a role to use for this token. Overwrites existing roles. May be specified multiple times" },
  { name: "role-name", kind: "list", valueName: "value", usage: "Name of a role to use for this token. Overwrites existing roles. May be specified multiple times" },
  { name: "append-role-id", kind: "list", valueName: "value", usage: "ID of a role to add to this token. The token retains existing roles. May be specified multiple times" },
  { name: "append-role-name", kind: "list", valueName: "value", usage: "Name of a role to add to this token. The token retains existing roles. May be specified multiple times" },
  { name: "service-identity", kind: "list", valueName: "value", usage: "Name of a service identity to use for this token. Overwrites existing service identities. May be specified multiple times. Format is the SERVICENAME or SERVICENAME:DATACENTER1,DATACENTER2,..." },
  { name: "append-service-identity", kind: "list", valueName: "value", usage: "Name of a service identity to add to this token. The token retains existing service identities. May be specified multiple times. Format is the SERVICENAME or SERVICENAME:DATACENTER1,DATACENTER2,..." },
  { name: "node-identity", kind: "list", valueName: "value", usage: "Name of a node identity to use for this token. Overwrites existing node identities. May be specified multiple times. Format is NODENAME:DATACENTER" },
  { name: "append-node-identity", kind: "list", valueName: "value", usage: "Name of a node identity to add to this token. The token retains existing node identities. May be specified multiple times. Format is NODENAME:DATACENTER" },
  { name: "merge-policies", kind: "bool", usage: "Deprecated. Merge the new policies with the existing policies. Use -append-policy-id or -append-policy-name instead." },
  { name: "merge-roles", kind: "bool", usage: "Deprecated. Merge the new roles with the existing roles. Use -append-role-id or -append-role-name instead." },
  { name: "merge-service-identities", kind: "bool", usage: "Deprecated. Merge the new service identities with the existing service identities. Use -append-service-identity instead." },
  { name: "merge-node-identities", kind: "bool", usage: "Deprecated. Merge the new node identities with the existing node identities. Use -append-node-identity instead." },
];

/**
 * One family of links on an update: -X-id/-X-name replace (or, with the
 * deprecated -merge-X, add to) the token's, -append-X-* add to them; the two
 * kinds cannot be combined. Returns the new links, or an error text.
 */
async function updatedLinks(p: ParsedFlags, family: "policy" | "role", current: readonly AclLinkJson[], resolve: (partial: string) => Promise<string>): Promise<AclLinkJson[] | string> {
  const set = await linksFrom(list(p, `${family}-name`), list(p, `${family}-id`), resolve);
  const add = await linksFrom(list(p, `append-${family}-name`), list(p, `append-${family}-id`), resolve);
  const plural = family === "policy" ? "policies" : "roles";
  if (bool(p, `merge-${plural}`)) return mergeLinks(current, [...set, ...add]);
  if (set.length && add.length) {
    return `Cannot combine the use of ${family}-id/${family}-name flags with append- variants. To set or overwrite existing ${plural}, use -${family}-id or -${family}-name. To append to existing ${plural}, use -append-${family}-id or -append-${family}-name.`;
  }
  return set.length ? set : mergeLinks(current, add);
}

export const aclTokenUpdate: Command = {
  name: "acl token update",
  synopsis: "Update an ACL token",
  help: () => formatHelp(`
Usage: cairn acl token update [options]

    This command will update a token. Some parts such as marking the token local
    cannot be changed. Policies, roles and identities not named by a flag are
    kept; -policy-*, -role-*, -service-identity and -node-identity replace the
    token's, the -append-* flags add to them.

    Update a token description and keep its policies:

        $ cairn acl token update -accessor-id abcd -description "replication"

    Update all editable fields of the token:

        $ cairn acl token update -accessor-id abcd \\
                                 -description "replication" \\
                                 -policy-name "token-replication" \\
                                 -role-name "db-updater"
`, updateFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenUpdate, args, updateFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const given = accessorFlag(p, io, "update");
    if (given === undefined) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    let id: string;
    try {
      id = await findAccessorId(acl, given);
    } catch (err) {
      io.stderr(`Error determining token ID: ${apiErrorText(err)}\n`);
      return 1;
    }
    let t: AclTokenJson;
    try {
      t = await acl.tokenRead(id);
    } catch (err) {
      io.stderr(`Error when retrieving current token: ${apiErrorText(err)}\n`);
      return 1;
    }
    if (str(p, "description") !== "") t.Description = str(p, "description");
    for (const [set, add, what] of [["service-identity", "append-service-identity", "service identities"], ["node-identity", "append-node-identity", "node identities"]] as const) {
      if (list(p, set).length && list(p, add).length) {
        io.stderr(`Cannot combine the use of ${set} flag with ${add}. To set or overwrite existing ${what}, use -${set}. To append to existing ${what}, use -${add}.\n`);
        return 1;
      }
    }
    const ids = identitiesOf(io, () => ({
      siSet: serviceIdentitiesFrom(list(p, "service-identity")),
      siAdd: serviceIdentitiesFrom(list(p, "append-service-identity")),
      niSet: nodeIdentitiesFrom(list(p, "node-identity")),
      niAdd: nodeIdentitiesFrom(list(p, "append-node-identity")),
    }));
    if (!ids) return 1;
    for (const [family, resolve] of [["policy", (x: string) => policyIdFromPartial(acl, x)], ["role", (x: string) => roleIdFromPartial(acl, x)]] as const) {
      let links: AclLinkJson[] | string;
      try {
        links = await updatedLinks(p, family, (family === "policy" ? t.Policies : t.Roles) ?? [], resolve);
      } catch (err) {
        io.stderr(`Error resolving ${family} ID: ${apiErrorText(err)}\n`);
        return 1;
      }
      if (typeof links === "string") {
        io.stderr(`${links}\n`);
        return 1;
      }
      if (family === "policy") t.Policies = links;
      else t.Roles = links;
    }
    // Service identities: a new one of a service already there replaces it; node identities: added unless present.
    const si = bool(p, "merge-service-identities") || ids.siSet.length === 0 ? [...(t.ServiceIdentities ?? [])] : [];
    for (const s of [...ids.siSet, ...ids.siAdd]) {
      const i = si.findIndex((x) => x.ServiceName === s.ServiceName);
      if (i >= 0) si[i] = s;
      else si.push(s);
    }
    t.ServiceIdentities = si;
    const ni = bool(p, "merge-node-identities") || ids.niSet.length === 0 ? [...(t.NodeIdentities ?? [])] : [];
    for (const n of [...ids.niSet, ...ids.niAdd]) {
      if (!ni.some((x) => x.NodeName === n.NodeName && x.Datacenter === n.Datacenter)) ni.push(n);
    }
    t.NodeIdentities = ni;
    try {
      show(io, format, await acl.tokenUpdate(t));
      return 0;
    } catch (err) {
      io.stderr(`Failed to update token ${id}: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const cloneFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  ...accessorFlags,
  { name: "description", kind: "string", valueName: "value", usage: "A description of the new cloned token" },
];

export const aclTokenClone: Command = {
  name: "acl token clone",
  synopsis: "Clone an ACL token",
  help: () => formatHelp(`
Usage: cairn acl token clone [options]

    This command will clone a token. When cloning an alternate description may be given
    for use with the new token.

    Example:

        $ cairn acl token clone -accessor-id abcd -description "replication"
`, cloneFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclTokenClone, args, cloneFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const given = accessorFlag(p, io, "clone");
    if (given === undefined) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    let id: string;
    try {
      id = await findAccessorId(acl, given);
    } catch (err) {
      io.stderr(`Error determining token Accessor ID: ${apiErrorText(err)}\n`);
      return 1;
    }
    try {
      show(io, format, await acl.tokenClone(id, str(p, "description")));
      return 0;
    } catch (err) {
      io.stderr(`Error cloning token: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
