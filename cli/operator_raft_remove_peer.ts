// `cairn operator raft remove-peer`, as consul command/operator/raft/removepeer.
import { Operator } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, httpServerFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags.filter((f) => f.name !== "stale"),
  { name: "address", kind: "string", valueName: "addr", usage: "The address to remove from the Raft configuration." },
  { name: "id", kind: "string", valueName: "id", usage: "The ID to remove from the Raft configuration." },
];

const HELP = `
Usage: cairn operator raft remove-peer [options]

  Remove the Cairn server with given -id from the Raft configuration.

  There are rare cases where a peer may be left behind in the Raft quorum even
  though the server is no longer present and known to the cluster. This command
  can be used to remove the failed server so that it is no longer affects the
  Raft quorum. If the server still shows in the output of the "cairn members"
  command, it is preferable to clean up by simply running "cairn force-leave"
  instead of this command.
`;

export const operatorRaftRemovePeer: Command = {
  name: "operator raft remove-peer",
  synopsis: "Remove a Cairn server from the Raft configuration",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorRaftRemovePeer, args, flags, io);
    if (typeof p === "number") return p;
    const id = str(p, "id");
    const address = str(p, "address");
    if (id === "" && address === "") {
      io.stderr("Error removing peer: an address or id is required for the peer to remove\n");
      return 1;
    }
    if (id !== "" && address !== "") {
      io.stderr("Error removing peer: cannot give both an address and id\n");
      return 1;
    }
    const op = new Operator(apiClientFromFlags(p, io));
    try {
      if (id !== "") await op.raftRemovePeerByID(id);
      else await op.raftRemovePeerByAddress(address);
    } catch (err) {
      io.stderr(`Error removing peer: ${apiErrorText(err)}\n`);
      return 1;
    }
    io.stdout(id !== "" ? `Removed peer with id "${id}"\n` : `Removed peer with address "${address}"\n`);
    return 0;
  },
};
