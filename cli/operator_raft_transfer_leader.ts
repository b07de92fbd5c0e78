// `cairn operator raft transfer-leader`, as consul command/operator/raft/transferleader.
import { Operator } from "../core/api/operator.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpClientFlags, httpServerFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [
  ...httpClientFlags,
  ...httpServerFlags.filter((f) => f.name !== "stale"),
  { name: "id", kind: "string", valueName: "id", usage: "The ID of the server to transfer leadership to (default: the most up-to-date voter)." },
];

const HELP = `
Usage: cairn operator raft transfer-leader [options]

  Transfer raft leadership to another node.
`;

export const operatorRaftTransferLeader: Command = {
  name: "operator raft transfer-leader",
  synopsis: "Transfer raft leadership to another node",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(operatorRaftTransferLeader, args, flags, io);
    if (typeof p === "number") return p;
    if (p.positionals.length > 0) {
      io.stderr(`Too many arguments (expected 0, got ${p.positionals.length})\n`);
      return 1;
    }
    let ok: boolean;
    try {
      ok = await new Operator(apiClientFromFlags(p, io)).raftLeaderTransfer(str(p, "id") || undefined);
    } catch (err) {
      io.stderr(`Error transferring leadership: ${apiErrorText(err)}\n`);
      return 1;
    }
    if (!ok) {
      io.stderr("Error transferring leadership: the leader did not hand over leadership\n");
      return 1;
    }
    io.stdout("Success\n");
    return 0;
  },
};
