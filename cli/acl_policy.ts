// `cairn acl policy create|list|read|delete`, as consul command/acl/policy/*.
import { Acl, type AclPolicyJson } from "../core/api/acl.ts";
import { formatFlag, formatOf, policyIdFromPartial, prettyPolicy, prettyPolicyListEntry } from "./_acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpFlags, list, str } from "./_flags.ts";
import type { FlagSpec, ParsedFlags } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

/** Consul's helpers.LoadDataSource: `@file` reads a file, `-` reads stdin, anything else is the value. */
async function loadDataSource(value: string, io: CliIo): Promise<string> {
  if (value === "-") return new TextDecoder().decode(await io.stdin());
  if (value.startsWith("@")) return new TextDecoder().decode(await io.readFile(value.slice(1)));
  return value;
}

function show(io: CliIo, format: "pretty" | "json", p: AclPolicyJson): void {
  io.stdout(format === "json" ? `${JSON.stringify(p, null, 4)}\n` : prettyPolicy(p));
}

const idFlag: FlagSpec = { name: "id", kind: "string", valueName: "value", usage: "The ID of the policy. It may be specified as a unique ID prefix but will error if the prefix matches multiple policy IDs." };
const nameFlag: FlagSpec = { name: "name", kind: "string", valueName: "value", usage: "The name of the policy." };

/** A policy ID from -id (exact or a unique prefix) or -name. */
async function findPolicyId(acl: Acl, p: ParsedFlags): Promise<string> {
  const name = str(p, "name");
  if (name) return (await acl.policyReadByName(name)).ID;
  const id = str(p, "id");
  if (id === "") throw new Error("Must specify either the -id or -name parameters");
  return await policyIdFromPartial(acl, id);
}

/** The policy ID the flags name, or undefined once the reason is on stderr. */
async function policyId(acl: Acl, p: ParsedFlags, io: CliIo): Promise<string | undefined> {
  try {
    return await findPolicyId(acl, p);
  } catch (err) {
    io.stderr(`Error determining policy ID: ${apiErrorText(err)}\n`);
    return undefined;
  }
}

const createFlags: readonly FlagSpec[] = [
  ...httpFlags,
  formatFlag,
  { name: "name", kind: "string", valueName: "value", usage: "The new policy's name. This flag is required." },
  { name: "description", kind: "string", valueName: "value", usage: "A description of the policy" },
  { name: "rules", kind: "string", valueName: "value", usage: "The policy rules. May be prefixed with '@' to indicate that the value is a file path to load the rules from. '-' may also be given to indicate that the rules are available on stdin" },
  { name: "valid-datacenter", kind: "list", valueName: "value", usage: "Datacenter that the policy should be valid within. This flag may be specified multiple times" },
];

export const aclPolicyCreate: Command = {
  name: "acl policy create",
  synopsis: "Create an ACL policy",
  help: () => formatHelp(`
Usage: cairn acl policy create -name NAME [options]

    Create a new policy:

        $ cairn acl policy create -name "new-policy" \\
                                  -description "This is an example policy" \\
                                  -rules @rules.hcl
`, createFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclPolicyCreate, args, createFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const name = str(p, "name");
    if (name === "") {
      io.stderr("Missing required '-name' flag\n");
      return 1;
    }
    let rules: string;
    try {
      rules = await loadDataSource(str(p, "rules"), io);
    } catch (err) {
      io.stderr(`Error loading rules: ${apiErrorText(err)}\n`);
      return 1;
    }
    try {
      const dcs = list(p, "valid-datacenter");
      const created = await new Acl(apiClientFromFlags(p, io)).policyCreate({ Name: name, Description: str(p, "description"), Rules: rules, ...(dcs.length ? { Datacenters: dcs } : {}) });
      show(io, format, created);
      return 0;
    } catch (err) {
      io.stderr(`Failed to create new policy: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const readFlags: readonly FlagSpec[] = [...httpFlags, formatFlag, idFlag, nameFlag];

export const aclPolicyRead: Command = {
  name: "acl policy read",
  synopsis: "Read an ACL policy",
  help: () => formatHelp(`
Usage: cairn acl policy read [options] POLICY

    This command will retrieve and print out the details
    of a single policy.

    Read:

        $ cairn acl policy read -id fdabbcb5-9de5-4b1a-961f-77214ae88cba

    Read by name:

        $ cairn acl policy read -name my-policy
`, readFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclPolicyRead, args, readFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    const acl = new Acl(apiClientFromFlags(p, io));
    const id = await policyId(acl, p, io);
    if (id === undefined) return 1;
    try {
      show(io, format, await acl.policyRead(id));
      return 0;
    } catch (err) {
      io.stderr(`Error reading policy "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const listFlags: readonly FlagSpec[] = [...httpFlags, formatFlag];

export const aclPolicyList: Command = {
  name: "acl policy list",
  synopsis: "Lists ACL policies",
  help: () => formatHelp(`
Usage: cairn acl policy list [options]

  Lists all the ACL policies.

  Example:

    $ cairn acl policy list
`, listFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclPolicyList, args, listFlags, io);
    if (typeof p === "number") return p;
    const format = formatOf(p, io);
    if (!format) return 1;
    try {
      const policies = await new Acl(apiClientFromFlags(p, io)).policyList();
      io.stdout(format === "json" ? `${JSON.stringify(policies, null, 4)}\n` : policies.map(prettyPolicyListEntry).join(""));
      return 0;
    } catch (err) {
      io.stderr(`Failed to retrieve the policy list: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};

const deleteFlags: readonly FlagSpec[] = [...httpFlags, idFlag, nameFlag];

export const aclPolicyDelete: Command = {
  name: "acl policy delete",
  synopsis: "Delete an ACL policy",
  help: () => formatHelp(`
Usage: cairn acl policy delete [options] -id POLICY

  Deletes an ACL policy by providing either the ID or a unique ID prefix.

  Delete by prefix:

    $ cairn acl policy delete -id b6b85

  Delete by name:

    $ cairn acl policy delete -name my-policy
`, deleteFlags),
  async run(args, io) {
    const p = parseCommandFlags(aclPolicyDelete, args, deleteFlags, io);
    if (typeof p === "number") return p;
    const acl = new Acl(apiClientFromFlags(p, io));
    const id = await policyId(acl, p, io);
    if (id === undefined) return 1;
    try {
      await acl.policyDelete(id);
    } catch (err) {
      io.stderr(`Error deleting policy "${id}": ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`Policy "${id}" deleted successfully\n`);
    return 0;
  },
};
