// `cairn acl bootstrap`, as consul command/acl/bootstrap.
import { Acl } from "../core/api/acl.ts";
import { formatFlag, outputFormat, prettyToken } from "./_acl.ts";
import { parseCommandFlags } from "./_command.ts";
import { apiClientFromFlags, formatHelp, httpFlags, str } from "./_flags.ts";
import type { FlagSpec } from "./_flags.ts";
import type { CliIo, Command } from "./_io.ts";
import { apiErrorText } from "./_output.ts";

const flags: readonly FlagSpec[] = [...httpFlags, formatFlag];

const HELP = `
Usage: cairn acl bootstrap [options]

  The bootstrap command will request Cairn to generate a new token with
  unlimited privileges to use for management purposes and output its details.
  This can only be done once and afterwards bootstrapping will be disabled.
  If all tokens are lost and you need to bootstrap again you can follow the
  bootstrap reset procedure: write the reset index from the error into
  <data-dir>/acl-bootstrap-reset on the leader.
`;

export const aclBootstrap: Command = {
  name: "acl bootstrap",
  synopsis: "Bootstrap Cairn's ACL system",
  help: () => formatHelp(HELP, flags),
  async run(args: string[], io: CliIo): Promise<number> {
    const p = parseCommandFlags(aclBootstrap, args, flags, io);
    if (typeof p === "number") return p;
    const format = outputFormat(str(p, "format"));
    if (format !== "pretty" && format !== "json") {
      io.stderr(`${format}\n`);
      return 1;
    }
    try {
      const t = await new Acl(apiClientFromFlags(p, io)).bootstrap();
      io.stdout(format === "json" ? `${JSON.stringify(t, null, 4)}\n` : prettyToken(t));
      return 0;
    } catch (err) {
      io.stderr(`Failed ACL bootstrapping: ${apiErrorText(err)}\n`);
      return 1;
    }
  },
};
