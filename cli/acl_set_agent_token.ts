// `cairn acl set-agent-token TYPE TOKEN`, as consul command/acl/agenttokens.
import { Acl } from "../core/api/acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpFlags } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpFlags];
const types = ["default", "agent", "recovery", "agent_recovery", "replication", "config_file_service_registration", "dns"];

const HELP = `
Usage: cairn acl set-agent-token [options] TYPE TOKEN

  This command will set the corresponding token for the agent to use. If
  token persistence is enabled, the token is kept across restarts.

  Token Types:

    default       The default token is the token that agents will try to use
                  in most operations, and for requests that carry none.
    agent         The agent token is used for the agent's own operations
                  (registering itself and its services in the catalog).
    recovery      The agent recovery token.
    replication   The replication token.

      $ cairn acl set-agent-token default c4d0f8df-3aba-4ab6-a7a0-35b760dc29a1
`;

export const aclSetAgentToken: Command = {
  name: "acl set-agent-token",
  synopsis: "Assign tokens for the Cairn agent's usage",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(aclSetAgentToken, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length !== 2) {
      io.stderr(`Missing TYPE and TOKEN arguments\n`);
      return 1;
    }
    const [type, token] = p.positionals as [string, string];
    if (!types.includes(type)) {
      io.stderr(`Unknown token type "${type}"\n`);
      return 1;
    }
    try {
      await new Acl(apiClientFromFlags(p, io)).setAgentToken(type === "recovery" ? "agent_recovery" : type, token);
    } catch (err) {
      io.stderr(`Failed to set ACL token "${type}": ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(`ACL token "${type}" set successfully\n`);
    return 0;
  },
};
