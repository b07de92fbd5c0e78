// The `cairn` executable's entry (bundled by scripts/build.ts): run one
// command line against the real process and exit with its code. The exit is
// explicit: a command is over when runCli resolves, even if some component
// that failed to start left a socket or timer behind. (stdout and stderr are
// synchronous for files and pipes on Linux, so nothing written is lost.)
import { processIo, runCli } from "./run.ts";

runCli(process.argv.slice(2), processIo()).then(
  (code) => {
    process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
