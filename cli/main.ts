// The `cairn` executable's entry (bundled by scripts/build.ts): run one
// command line against the real process and exit with its code.
import { processIo, runCli } from "./run.ts";

runCli(process.argv.slice(2), processIo()).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
