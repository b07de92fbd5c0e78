// `cairn acl role create|list|read|update|delete`, as consul command/acl/role/*.
import { Acl, type AclLinkJson, type AclRoleJson } from "../core/api/acl.ts";
import { formatFlag, formatOf, identitiesOf, nodeIdentitiesFrom, policyIdFromPartial, prettyRole, prettyRoleListEntry, roleIdFromPartial, serviceIdentitiesFrom, showAs } from "./_acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, bool, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const linkFlags: FlagSpec[] = [
  { name: "policy-id", kind: "list", valueName: "value", usage: "ID of a policy to use for this role. May be specified multiple times" },
  { name: "policy-name", kind: "list", valueName: "value", usage: "Name of a policy to use for this role. May be specified multiple times" },
  { name: "service-identity", kind: "list", valueName: "value", usage: "Name of a service identity to use for this role. May be specified multiple times. Format is the SERVICENAME or SERVICENAME:DATACENTER1,DATACENTER2,..." },
  { name: "node-identity", kind: "list", valueName: "value", usage: "Name of a node identity to use for this role. May be specified multiple times. Format is NODENAME:DATACENTER" },
];

/** -policy-name links as given (the servers resolve names), then -policy-id links (unique prefixes resolved here). */
async function policyLinks(acl: Acl, p: ParsedFlags): Promise<AclLinkJson[]> {
  const out: AclLinkJson[] = list(p, "policy-name").map((Name) => ({ Name }));
  for (const id of list(p, "policy-id")) out.push({ ID: await policyIdFromPartial(acl, id) });
  return out;
}

/** A role ID from -id (exact or a unique prefix) or -name. */
async function findRoleId(acl: Acl, p: ParsedFlags): Promise<string> {
  const name = str(p, "name");
  const id = str(p, "id");
  if (id !== "") return await roleIdFromPartial(acl, id);
  if (name !== "") return (await acl.roleReadByName(name)).ID;
  throw new Error("Must specify either the -id or -name parameters");
}

/** The role ID the flags name, or undefined once the reason is on stderr. */
async function roleId(acl: Acl, p: ParsedFlags, io: CliIo): Promise<string | undefined> {
  try {
    return await findRoleId(acl, p);
  } catch (err) {
    io.stderr(`Error determining role ID: ${apiErrorText(err)}\n`);
    return undefined;
  }
}

const createFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  { name: "name", kind: "string", valueName: "value", usage: "The new role's name. This flag is required." },
  { name: "description", kind: "string", valueName: "value", usage: "A description of the role" },
  ...linkFlags,
];

export const aclRoleCreate: Command = {
  name: "acl role create",
  synopsis: "Create an ACL role",
  help: () => formatHelp(`
Usage: cairn acl role create -name NAME [options]

    Create a new role:

        $ cairn acl role create -name "new-role" \\
                                -description "This is an example role" \\
                                -policy-id b52fc3de-5 \\
                                -policy-name "acl-replication" \\
                                -service-identity "web" \\
                                -service-identity "db:east,west"
`, createFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclRoleCreate, args, createFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    if (str(p, "name") === "") {
      io.stderr("Missing required '-name' flag\n");
      return 1;
    }
    if (linkFlags.every((f) => list(p, f.name).length === 0)) {
      io.stderr("Cannot create a role without specifying -policy-name, -policy-id, -service-identity, or -node-identity at least once\n");
      return 1;
    }
    const ids = identitiesOf(io, () => ({ si: serviceIdentitiesFrom(list(p, "service-identity")), ni: nodeIdentitiesFrom(list(p, "node-identity")) }));
    if (!ids) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    const role: Partial<AclRoleJson> = { Name: str(p, "name"), Description: str(p, "description") };
    try {
      role.Policies = await policyLinks(acl, p);
    } catch (err) {
      io.stderr(`Error resolving policy ID: ${apiErrorText(err)}\n`);
      return 1;
    }
    if (ids.si.length) role.ServiceIdentities = ids.si;
    if (ids.ni.length) role.NodeIdentities = ids.ni;
    try {
      showAs(io, format, await acl.roleCreate(role), prettyRole);
      return 0;
    } catch (err) {
      io.stderr(`Failed to create new role: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const idFlag: FlagSpec = { name: "id", kind: "string", valueName: "value", usage: "The ID of the role. It may be specified as a unique ID prefix but will error if the prefix matches multiple role IDs" };
const nameFlag: FlagSpec = { name: "name", kind: "string", valueName: "value", usage: "The name of the role." };
const readFlags: readonly FlagSpec[] = [...httpFlags, formatFlag, idFlag, nameFlag];

export const aclRoleRead: Command = {
  name: "acl role read",
  synopsis: "Read an ACL role",
  help: () => formatHelp(`
Usage: cairn acl role read [options] ROLE

    This command will retrieve and print out the details
    of a single role.

    Read:

        $ cairn acl role read -id fdabbcb5-9de5-4b1a-961f-77214ae88cba

    Read by name:

        $ cairn acl role read -name my-role
`, readFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclRoleRead, args, readFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    const id = await roleId(acl, p, io);
    if (id === undefined) return 1;
    try {
      showAs(io, format, await acl.roleRead(id), prettyRole);
      return 0;
    } catch (err) {
      io.stderr(`Error reading role "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const listFlags: readonly FlagSpec[] = [...httpFlags, formatFlag];

export const aclRoleList: Command = {
  name: "acl role list",
  synopsis: "Lists ACL roles",
  help: () => formatHelp(`
Usage: cairn acl role list [options]

  Lists all the ACL roles.

  Example:

    $ cairn acl role list
`, listFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclRoleList, args, listFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    try {
      showAs(io, format, await new Acl(apiClientFromFlags(p, io)).roleList(), (roles) => roles.map(prettyRoleListEntry).join(""));
      return 0;
    } catch (err) {
      io.stderr(`Failed to retrieve the role list: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const updateFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  { name: "id", kind: "string", valueName: "value", usage: "The ID of the role to update. It may be specified as a unique ID prefix but will error if the prefix matches multiple role IDs" },
  { name: "name", kind: "string", valueName: "value", usage: "The role name." },
  { name: "description", kind: "string", valueName: "value", usage: "A description of the role" },
  ...linkFlags,
  { name: "no-merge", kind: "bool", usage: "Do not merge the current role information with what is provided to the command. Instead overwrite all fields with the exception of the role ID which is immutable." },
];

export const aclRoleUpdate: Command = {
  name: "acl role update",
  synopsis: "Update an ACL role",
  help: () => formatHelp(`
Usage: cairn acl role update [options]

  Updates a role. By default it will merge the role information with its
  current state so that you do not have to provide all parameters. This
  behavior can be disabled by passing -no-merge.

  Rename the role:

          $ cairn acl role update -id abcd -name "better-name"

  Update all editable fields of the role:

          $ cairn acl role update -id abcd \\
                                  -name "better-name" \\
                                  -description "replication" \\
                                  -policy-name "token-replication" \\
                                  -service-identity "web"
`, updateFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclRoleUpdate, args, updateFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    if (str(p, "id") === "") {
      io.stderr("Cannot update a role without specifying the -id parameter\n");
      return 1;
    }
    const acl = new Acl(apiClientFromFlags(p, io));
    let id: string;
    try {
      id = await roleIdFromPartial(acl, str(p, "id"));
    } catch (err) {
      io.stderr(`Error determining role ID: ${apiErrorText(err)}\n`);
      return 1;
    }
    const ids = identitiesOf(io, () => ({ si: serviceIdentitiesFrom(list(p, "service-identity")), ni: nodeIdentitiesFrom(list(p, "node-identity")) }));
    if (!ids) return 1;
    let current: AclRoleJson;
    try {
      current = await acl.roleRead(id);
    } catch (err) {
      io.stderr(`Error when retrieving current role: ${apiErrorText(err)}\n`);
      return 1;
    }
    let links: AclLinkJson[];
    try {
      links = await policyLinks(acl, p);
    } catch (err) {
      io.stderr(`Error resolving policy ID: ${apiErrorText(err)}\n`);
      return 1;
    }
    let role: AclRoleJson;
    if (bool(p, "no-merge")) {
      role = { ...current, Name: str(p, "name"), Description: str(p, "description"), Policies: links, ServiceIdentities: ids.si, NodeIdentities: ids.ni };
    } else {
      // Merge: flags given replace the name and description, and add links and identities not there yet
      // (a service identity of a service already there replaces it).
      const policies = [...(current.Policies ?? [])];
      for (const l of links) if (!policies.some((x) => (l.ID !== undefined ? x.ID === l.ID : x.Name === l.Name))) policies.push(l);
      const si = [...(current.ServiceIdentities ?? [])];
      for (const s of ids.si) {
        const i = si.findIndex((x) => x.ServiceName === s.ServiceName);
        if (i >= 0) si[i] = s;
        else si.push(s);
      }
      const ni = [...(current.NodeIdentities ?? [])];
      for (const n of ids.ni) if (!ni.some((x) => x.NodeName === n.NodeName && x.Datacenter === n.Datacenter)) ni.push(n);
      role = {
        ...current,
        Name: str(p, "name") || current.Name,
        Description: str(p, "description") || current.Description,
        Policies: policies,
        ServiceIdentities: si,
        NodeIdentities: ni,
      };
    }
    try {
      showAs(io, format, await acl.roleUpdate({ ...role, ID: id }), prettyRole);
      return 0;
    } catch (err) {
      io.stderr(`Error updating role "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const deleteFlags: readonly FlagSpec[] = [...httpFlags, idFlag, nameFlag];

export const aclRoleDelete: Command = {
  name: "acl role delete",
  synopsis: "Delete an ACL role",
  help: () => formatHelp(`
Usage: cairn acl role delete [options] -id ROLE

  Deletes an ACL role by providing either the ID or a unique ID prefix.

  Delete by prefix:

    $ cairn acl role delete -id b6b85

  Delete by full ID:

    $ cairn acl role delete -id b6b856da-5193-4e78-845a-7d61ca8371ba

  Delete by name:

    $ cairn acl role delete -name my-role
`, deleteFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclRoleDelete, args, deleteFlags, io);
    if (typeof p === "number") return p;
    const acl = new Acl(apiClientFromFlags(p, io));
    const id = await roleId(acl, p, io);
    if (id === undefined) return 1;
    try {
      await acl.roleDelete(id);
    } catch (err) {
      io.stderr(`Error deleting role "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`Role "${id}" deleted successfully\n`);
    return 0;
  },
};
