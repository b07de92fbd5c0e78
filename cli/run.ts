// cairn's command line: a flat command table (consul command/registry.go),
// nested verbs found by longest match, Consul's usage text and exit codes.
// cli/main.ts is the process entry; everything here is callable from tests
// through `runCli(argv, io)`.
import { concatBytes } from "../core/bytes.ts";
import { lazyFsPromises } from "../core/lazy_builtins_node.ts";
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { agentCommand } from "./agent.ts";
import type { CliIo, Command } from "./_io.ts";
import { catalogDatacenters } from "./catalog_datacenters.ts";
import { catalogNodes } from "./catalog_nodes.ts";
import { catalogServices } from "./catalog_services.ts";
import { configKeysCommand } from "./config_keys.ts";
import { kvDelete } from "./kv_delete.ts";
import { kvExport } from "./kv_export.ts";
import { kvGet } from "./kv_get.ts";
import { kvImport } from "./kv_import.ts";
import { kvPut } from "./kv_put.ts";
import { maintCommand } from "./maint.ts";
import { operatorRaftListPeers } from "./operator_raft_list_peers.ts";
import { operatorRaftRemovePeer } from "./operator_raft_remove_peer.ts";
import { operatorRaftTransferLeader } from "./operator_raft_transfer_leader.ts";
import { operatorAutopilotGetConfig } from "./operator_autopilot_get_config.ts";
import { operatorAutopilotSetConfig } from "./operator_autopilot_set_config.ts";
import { operatorAutopilotState } from "./operator_autopilot_state.ts";
import { reloadCommand } from "./reload.ts";
import { servicesDeregister } from "./services_deregister.ts";
import { servicesRegister } from "./services_register.ts";
import { validateCommand } from "./validate.ts";
import { versionCommand } from "./version.ts";
import { eventCommand } from "./event.ts";
import { forceLeaveCommand } from "./force_leave.ts";
import { infoCommand } from "./info.ts";
import { joinCommand } from "./join.ts";
import { keygenCommand } from "./keygen.ts";
import { keyringCommand } from "./keyring.ts";
import { leaveCommand } from "./leave.ts";
import { membersCommand } from "./members.ts";
import { monitorCommand } from "./monitor.ts";
import { rttCommand } from "./rtt.ts";
import { TLS_CA_HELP, TLS_CERT_HELP, TLS_HELP } from "./tls_help.ts";
import { lockCommand } from "./lock.ts";
import { watchCommand } from "./watch.ts";

const readFile = lazyFsPromises("readFile");

/** V8's spaces that are not the old generation (oldGenerationBytes). */
const youngOrReadOnly = new Set(["new_space", "new_large_object_space", "read_only_space"]);

/** Where scripts/sea_main.cjs offers the executable's second (whole-CLI) bundle. */
const FULL_BUNDLE = Symbol.for("cairn.fullBundle");

/**
 * A command whose module loads only when it runs (or prints its help). The
 * commands an agent never runs (sync, doctor, debug, tls, acl, snapshot) wait
 * until someone types them, so their modules' top-level code and bytecode stay
 * out of an agent. In the executable they are not even in the bundle an agent
 * parses (its source is resident for the agent's life): scripts/build.ts
 * leaves them out of the executable's first bundle and puts the whole CLI in
 * a second one, which sea_main.cjs offers through FULL_BUNDLE; the first
 * bundle hands the command line over to it instead of importing (the second
 * bundle runs runCli on the same argv and exits the process, so this promise
 * never settles). Run from source (tests, tsx, Deno), there is no hand-over
 * and the import happens here.
 */
function lazyCommand(name: string, synopsis: string, importIt: () => Promise<Command>): Command {
  const load = (): Promise<Command> => {
    const full = (globalThis as Record<symbol, unknown>)[FULL_BUNDLE];
    if (typeof full !== "function") return importIt();
    full();
    return new Promise<never>(() => {});
  };
  return {
    name,
    synopsis,
    help: () => synopsis,
    load,
    run: async (args, io) => (await load()).run(args, io),
  };
}
const debugCommand = lazyCommand("debug", "Records a debugging archive for operators", async () => (await import("./debug.ts")).debugCommand);
const doctorCommand = lazyCommand("doctor", "Finds what is wrong with a cluster and says how to fix it", async () => (await import("./doctor.ts")).doctorCommand);
const snapshotInspect = lazyCommand("snapshot inspect", "Displays information about a Cairn snapshot file", async () => (await import("./snapshot.ts")).snapshotInspect);
const snapshotRestore = lazyCommand("snapshot restore", "Restores snapshot of Cairn server state", async () => (await import("./snapshot.ts")).snapshotRestore);
const snapshotSave = lazyCommand("snapshot save", "Saves snapshot of Cairn server state", async () => (await import("./snapshot.ts")).snapshotSave);
const tlsCaCreate = lazyCommand("tls ca create", "Create a new consul CA", async () => (await import("./tls.ts")).tlsCaCreate);
const tlsCertCreate = lazyCommand("tls cert create", "Create a new certificate", async () => (await import("./tls.ts")).tlsCertCreate);
const aclBootstrap = lazyCommand("acl bootstrap", "Bootstrap Cairn's ACL system", async () => (await import("./acl_bootstrap.ts")).aclBootstrap);
const aclPolicyCreate = lazyCommand("acl policy create", "Create an ACL policy", async () => (await import("./acl_policy.ts")).aclPolicyCreate);
const aclPolicyDelete = lazyCommand("acl policy delete", "Delete an ACL policy", async () => (await import("./acl_policy.ts")).aclPolicyDelete);
const aclPolicyList = lazyCommand("acl policy list", "Lists ACL policies", async () => (await import("./acl_policy.ts")).aclPolicyList);
const aclPolicyRead = lazyCommand("acl policy read", "Read an ACL policy", async () => (await import("./acl_policy.ts")).aclPolicyRead);
const aclRoleCreate = lazyCommand("acl role create", "Create an ACL role", async () => (await import("./acl_role.ts")).aclRoleCreate);
const aclRoleDelete = lazyCommand("acl role delete", "Delete an ACL role", async () => (await import("./acl_role.ts")).aclRoleDelete);
const aclRoleList = lazyCommand("acl role list", "Lists ACL roles", async () => (await import("./acl_role.ts")).aclRoleList);
const aclRoleRead = lazyCommand("acl role read", "Read an ACL role", async () => (await import("./acl_role.ts")).aclRoleRead);
const aclRoleUpdate = lazyCommand("acl role update", "Update an ACL role", async () => (await import("./acl_role.ts")).aclRoleUpdate);
const aclSetAgentToken = lazyCommand("acl set-agent-token", "Assign tokens for the Cairn agent's usage", async () => (await import("./acl_set_agent_token.ts")).aclSetAgentToken);
const aclTokenClone = lazyCommand("acl token clone", "Clone an ACL token", async () => (await import("./acl_token.ts")).aclTokenClone);
const aclTokenCreate = lazyCommand("acl token create", "Create an ACL token", async () => (await import("./acl_token.ts")).aclTokenCreate);
const aclTokenDelete = lazyCommand("acl token delete", "Delete an ACL token", async () => (await import("./acl_token.ts")).aclTokenDelete);
const aclTokenList = lazyCommand("acl token list", "List ACL tokens", async () => (await import("./acl_token.ts")).aclTokenList);
const aclTokenRead = lazyCommand("acl token read", "Read an ACL token", async () => (await import("./acl_token.ts")).aclTokenRead);
const aclTokenUpdate = lazyCommand("acl token update", "Update an ACL token", async () => (await import("./acl_token.ts")).aclTokenUpdate);
const syncCommand = lazyCommand("sync", "Consul-Terraform-Sync: run network automation tasks on catalog changes", async () => (await import("./sync.ts")).syncCommand);
const syncStartCommand = lazyCommand("sync start", "Run Consul-Terraform-Sync's daemon (tasks driven by catalog changes)", async () => (await import("./sync.ts")).syncStartCommand);
const syncTaskCommands: Command[] = [
  ["sync task enable", "Enable a sync task (it runs once now)"],
  ["sync task disable", "Disable a sync task (its watchers stay)"],
  ["sync task create", "Create a sync task from a task file (HCL or JSON)"],
  ["sync task delete", "Delete a sync task"],
  ["sync task list", "List sync tasks and their status"],
].map(([name, synopsis], i) => lazyCommand(name!, synopsis!, async () => (await import("./sync_task.ts")).syncTaskCommands[i]!));


/** A command that only groups subcommands (`cairn kv`). */
function parentCommand(name: string, synopsis: string, text: string): Command {
  const cmd: Command = {
    name,
    synopsis,
    help: () => `${text.trim()}\n\nSubcommands:\n${subcommandList(name)}\n`,
    // Like mitchellh/cli's RunResultHelp: usage on stderr, exit 1.
    async run(args: string[], io: CliIo): Promise<number> {
      if (args.some((a) => a === "-h" || a === "-help" || a === "--help")) {
        io.stdout(cmd.help());
        return 0;
      }
      io.stderr(cmd.help());
      return 1;
    },
  };
  return cmd;
}

export const commands: readonly Command[] = [
  parentCommand(
    "acl",
    "Interact with Cairn's ACLs",
    `
Usage: cairn acl <subcommand> [options] [args]

  This command has subcommands for interacting with Cairn's ACLs.
  Here are some simple examples, and more detailed examples are available
  in the subcommands or the documentation.

  Bootstrap ACLs:

      $ cairn acl bootstrap

  List all ACL tokens:

      $ cairn acl token list

  Create a new ACL policy:

      $ cairn acl policy create -name "new-policy" \\
                                -description "This is an example policy" \\
                                -rules @rules.hcl

  Set the default agent token:

      $ cairn acl set-agent-token default 0bc6bc46-f25e-4262-b2d9-ffbe1d96be6f
`,
  ),
  aclBootstrap,
  parentCommand("acl policy", "Manage Cairn's ACL policies", "\nUsage: cairn acl policy <subcommand> [options] [args]\n\n  This command has subcommands for managing Cairn's ACL policies.\n"),
  aclPolicyCreate,
  aclPolicyDelete,
  aclPolicyList,
  aclPolicyRead,
  parentCommand("acl role", "Manage Cairn's ACL roles", "\nUsage: cairn acl role <subcommand> [options] [args]\n\n  This command has subcommands for managing Cairn's ACL roles.\n"),
  aclRoleCreate,
  aclRoleDelete,
  aclRoleList,
  aclRoleRead,
  aclRoleUpdate,
  aclSetAgentToken,
  parentCommand("acl token", "Manage Cairn's ACL tokens", "\nUsage: cairn acl token <subcommand> [options] [args]\n\n  This command has subcommands for managing Cairn's ACL tokens.\n"),
  aclTokenClone,
  aclTokenCreate,
  aclTokenDelete,
  aclTokenList,
  aclTokenRead,
  aclTokenUpdate,
  agentCommand,
  parentCommand(
    "catalog",
    "Interact with the catalog",
    `
Usage: cairn catalog <subcommand> [options] [args]

  This command has subcommands for interacting with Cairn's catalog. The
  catalog should not be confused with the agent, although the APIs and
  responses may be similar.

  Here are some simple examples, and more detailed examples are available
  in the subcommands or the documentation.

  List all datacenters:

      $ cairn catalog datacenters

  List all nodes:

      $ cairn catalog nodes

  List all services:

      $ cairn catalog services

  For more examples, ask for subcommand help or view the documentation.
`,
  ),
  catalogDatacenters,
  catalogNodes,
  catalogServices,
  parentCommand(
    "config",
    "Inspect cairn's configuration keys",
    `
Usage: cairn config <subcommand> [options]

  This command has subcommands about the agent's configuration files.

  List every key of Consul's agent configuration and what cairn does with it:

      $ cairn config keys
`,
  ),
  configKeysCommand,
  parentCommand(
    "kv",
    "Interact with the key-value store",
    `
Usage: cairn kv <subcommand> [options] [args]

  This command has subcommands for interacting with the key-value store.
  Here are some simple examples, and more detailed examples are available
  in the subcommands or the documentation.

  Create or update the key named "redis/config/connections" with value "5":

      $ cairn kv put redis/config/connections 5

  Read this value back:

      $ cairn kv get redis/config/connections

  Or get detailed key information:

      $ cairn kv get -detailed redis/config/connections

  Finally, delete the key:

      $ cairn kv delete redis/config/connections

  For more examples, ask for subcommand help or view the documentation.
`,
  ),
  debugCommand,
  doctorCommand,
  eventCommand,
  forceLeaveCommand,
  infoCommand,
  joinCommand,
  keygenCommand,
  keyringCommand,
  kvDelete,
  kvExport,
  kvGet,
  kvImport,
  kvPut,
  leaveCommand,
  lockCommand,
  maintCommand,
  membersCommand,
  monitorCommand,
  parentCommand(
    "operator",
    "Provides cluster-level tools for Cairn operators",
    `
Usage: cairn operator <subcommand> [options]

  Provides cluster-level tools for Cairn operators, such as interacting with
  the Raft subsystem. NOTE: Use this command with extreme caution, as improper
  use could lead to a Cairn outage and even loss of data.
`,
  ),
  parentCommand(
    "operator raft",
    "Provides cluster-level tools for Cairn operators",
    `
Usage: cairn operator raft <subcommand> [options]

  The Raft operator command is used to interact with Cairn's Raft subsystem.
  The command can be used to verify Raft peers or in rare cases to recover
  quorum by removing invalid peers.
`,
  ),
  operatorRaftListPeers,
  operatorRaftRemovePeer,
  operatorRaftTransferLeader,
  parentCommand(
    "operator autopilot",
    "Provides tools for modifying Autopilot configuration",
    `
Usage: cairn operator autopilot <subcommand> [options]

  The Autopilot operator command is used to interact with Cairn's Autopilot
  subsystem. The command can be used to view or modify the current
  configuration.
`,
  ),
  operatorAutopilotGetConfig,
  operatorAutopilotSetConfig,
  operatorAutopilotState,
  reloadCommand,
  rttCommand,
  parentCommand(
    "snapshot",
    "Saves, restores and inspects snapshots of Cairn server state",
    `
Usage: cairn snapshot <subcommand> [options] [args]

  This command has subcommands for saving, restoring, and inspecting the state
  of the Cairn servers for disaster recovery. These are atomic, point-in-time
  snapshots which include key/value entries, service catalog, sessions and
  checks.

  Create a snapshot:

      $ cairn snapshot save backup.snap

  Restore a snapshot:

      $ cairn snapshot restore backup.snap

  Inspect a snapshot:

      $ cairn snapshot inspect backup.snap
`,
  ),
  snapshotInspect,
  snapshotRestore,
  snapshotSave,
  parentCommand(
    "services",
    "Interact with services",
    `
Usage: cairn services <subcommand> [options] [args]

  This command has subcommands for interacting with services. The subcommands
  default to working with services registered with the local agent. Please see
  the "cairn catalog" command for interacting with the entire catalog.

  Register a service:

      $ cairn services register web.json

  Deregister a service:

      $ cairn services deregister web.json

  For more examples, ask for subcommand help or view the documentation.
`,
  ),
  servicesDeregister,
  servicesRegister,
  parentCommand("tls", "Builtin helpers for creating CAs and certificates", TLS_HELP),
  parentCommand("tls ca", "Helpers for CAs", TLS_CA_HELP),
  tlsCaCreate,
  parentCommand("tls cert", "Helpers for certificates", TLS_CERT_HELP),
  tlsCertCreate,
  validateCommand,
  versionCommand,
  watchCommand,
  syncCommand,
  syncStartCommand,
  parentCommand("sync task", "Manage the tasks of a running sync instance", "\nUsage: cairn sync task <subcommand> [options]\n"),
  ...syncTaskCommands,
];

const byName = new Map(commands.map((c) => [c.name, c]));

function subcommandList(parent: string): string {
  const subs = commands.filter((c) => c.name.startsWith(`${parent} `) && !c.name.slice(parent.length + 1).includes(" "));
  const width = Math.max(0, ...subs.map((c) => c.name.length - parent.length - 1));
  return subs.map((c) => `    ${c.name.slice(parent.length + 1).padEnd(width)}    ${c.synopsis}`).join("\n");
}

/** The longest run of leading words that names a command, and the arguments after it. */
export function findCommand(argv: readonly string[]): { command: Command; args: string[] } | undefined {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith("-")) break;
    words.push(a);
  }
  for (let n = words.length; n > 0; n--) {
    const command = byName.get(words.slice(0, n).join(" "));
    if (command) return { command, args: argv.slice(n) };
  }
  return undefined;
}

/** mitchellh/cli BasicHelpFunc: top-level commands only. */
export function usage(): string {
  const top = commands.filter((c) => !c.name.includes(" ") && !c.hidden).sort((a, b) => a.name.localeCompare(b.name));
  const width = Math.max(...top.map((c) => c.name.length));
  const lines = top.map((c) => `    ${c.name.padEnd(width)}    ${c.synopsis}`);
  return `Usage: cairn [--version] [--help] <command> [<args>]\n\nAvailable commands are:\n${lines.join("\n")}\n`;
}

const HELP_FLAGS = new Set(["-h", "-help", "--help"]);
const VERSION_FLAGS = new Set(["-v", "-version", "--version"]);

/** Run one command line; returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  if (argv.length === 0) {
    io.stderr(usage());
    return 1;
  }
  // Like mitchellh/cli: -h/-v anywhere before the command words mean help/version.
  const first = argv[0]!;
  if (HELP_FLAGS.has(first)) {
    io.stdout(usage());
    return 0;
  }
  if (VERSION_FLAGS.has(first)) return versionCommand.run([], io);
  const found = findCommand(argv);
  if (!found) {
    io.stderr(`Unknown command: "${argv.filter((a) => !a.startsWith("-")).slice(0, 3).join(" ")}"\n\n${usage()}`);
    return 1;
  }
  const dashDash = found.args.indexOf("--");
  const beforeDashDash = dashDash >= 0 ? found.args.slice(0, dashDash) : found.args;
  if (beforeDashDash.some((a) => HELP_FLAGS.has(a))) {
    io.stdout((found.command.load ? await found.command.load() : found.command).help());
    return 0;
  }
  try {
    return await found.command.run(found.args, io);
  } catch (err) {
    io.stderr(`Error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

let gc: ((options: object) => void) | undefined;

/** The real process: argv, stdio, environment. */
export function processIo(): CliIo {
  return {
    stdout: (s) => void process.stdout.write(s),
    stderr: (s) => void process.stderr.write(s),
    stdin: async () => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of process.stdin) chunks.push(chunk as Uint8Array);
      return concatBytes(chunks);
    },
    env: process.env,
    readFile: async (path) => new Uint8Array(await readFile(path)),
    // V8 flags after start-up are Node's business (it keeps them writable); Deno freezes them. The
    // build's code-cache trainee (scripts/code_cache.ts) keeps V8's flags as they were at compile
    // time: V8 stamps the cache with the flags it is written under and rejects it under others.
    v8: "Deno" in globalThis || process.env.CAIRN_BUILD_CODE_CACHE_OUT ? undefined : {
      setV8Flags: (flags) => {
        for (const f of flags) setFlagsFromString(f);
      },
      cpuMicros: () => {
        const u = process.cpuUsage();
        return u.user + u.system;
      },
      heapBytes: () => getHeapStatistics().total_heap_size,
      oldGenerationBytes: () => {
        let n = 0;
        for (const sp of getHeapSpaceStatistics()) if (!youngOrReadOnly.has(sp.space_name)) n += sp.space_used_size;
        return n;
      },
      onFullGc: (fn) => {
        const { PerformanceObserver, constants } = process.getBuiltinModule("node:perf_hooks");
        const observer = new PerformanceObserver((list) => {
          if (list.getEntries().some((e) => (e as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) fn();
        });
        observer.observe({ entryTypes: ["gc"] });
        return { cancel: () => observer.disconnect() };
      },
      reduceMemory: () => {
        // V8's gc(), fetched once with the flag on only meanwhile (so the flags stay as the code cache
        // was stamped with); a full, synchronous collection gives the young generation's pages back.
        gc ??= (() => {
          setFlagsFromString("--expose-gc");
          try {
            return runInNewContext("gc") as (options: object) => void;
          } finally {
            setFlagsFromString("--no-expose-gc");
          }
        })();
        gc({ type: "major", execution: "sync" });
      },
    },
  };
}
