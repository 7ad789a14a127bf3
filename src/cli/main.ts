import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { configCommand, dropCommand, pruneCommand, switchCommand, verifyCommand } from './admin.js';
import { pullCommand, pushCommand, type PushOptions } from './remote.js';
import { closeOpenedStores, type GlobalOptions } from './context.js';
import { EXIT, EXIT_CODES_HELP } from './exit-codes.js';
import { diffCommand, type DiffOptions } from './diff.js';
import { listCommand, showCommand, statusCommand } from './info.js';
import { mcpCommand } from './mcp.js';
import { acpCommand } from './acp.js';
import { CliExit, describeFailure, Io } from './io.js';
import { invocationOf, processInvocation, type Invocation } from './invocation.js';
import { SERVE_FLAG } from '../server/address.js';
import { LAUNCHED_SERVER, sendWatchHint } from '../server/watch-hint.js';
import { hintWatchers } from '../capture/watchers.js';
import { serveForever } from '../server/server.js';
import { serverCommand } from './server-command.js';
import { hookCommand, hooksInstallCommand, hooksUninstallCommand, type HooksOptions } from './hooks.js';
import { hooksStatusCommand } from './hooks-status.js';
import { runCommand, type RunOptions } from './run.js';
import { revertCallCommand, revertCommand, type RevertOptions } from './revert.js';
import { redoCommand, undoCommand, type UndoOptions } from './undo.js';
import { shownText } from '../report/escape.js';

const CONFIG_HELP = `
Config: [checkpoints] in ./turnback.toml (the project) and $XDG_CONFIG_HOME/turnback/config.toml
(else ~/.config/turnback/config.toml); the project overrides the user. Checkpoints are on unless
enabled = false. Store: --store > TURNBACK_DIR > dir in config > $XDG_DATA_HOME/turnback/<project key>.
Colour only on a terminal, never when NO_COLOR is set. A picture that takes longer than about a
second shows a progress line on stderr (TURNBACK_PROGRESS_AFTER_MS sets the delay in ms).`;

function common(command: Command): Command {
  return command
    .option('--project <dir>', 'the project root (default: the git toplevel of the current folder; outside git, the nearest folder above with a turnback.toml or a store, else the current folder)')
    .option('--store <dir>', 'the checkpoint store folder (default: TURNBACK_DIR, then dir in config, then the per-project data folder)')
    .option('--json', 'print one JSON document on stdout, for scripts')
    .option('--all', 'print every row of every list (and every picture in list)')
    .addOption(new Option('-n, --rows <N>', 'rows of each list before the rest folds into one line (default 10)').argParser(positiveCount))
    .addHelpText('after', EXIT_CODES_HELP);
}

/** Parses `-n N`: a whole number of at least 1. */
function positiveCount(value: string): number {
  if (!/^[1-9][0-9]{0,6}$/.test(value)) throw new InvalidArgumentError('needs a whole number of at least 1');
  return Number(value);
}

/** Runs one command of `invocation`, turning thrown failures into a message (naming `typed`) and an exit code. */
async function runGuarded(invocation: Invocation, json: boolean | undefined, typed: string | undefined, setExit: (code: number) => void, fn: (io: Io) => Promise<number>): Promise<void> {
  const io = new Io(json === true, invocation);
  try {
    setExit(await fn(io));
  } catch (error) {
    const failure = describeFailure(error, typed);
    if (io.json) io.emit({ error: { reason: failure.reason, message: failure.message } });
    io.err(`turnback: ${shownText(failure.message)}`);
    setExit(failure.exitCode);
  }
}

/**
 * The agent and event of `turnback hook AGENT EVENT` with nothing else on the line — what every
 * installed hook and the hook listener run, twice per tool call —, else `undefined`.
 */
function bareHook(argv: readonly string[]): [string, string] | undefined {
  if (argv.length !== 5 || argv[2] !== 'hook') return undefined;
  const agent = argv[3] as string;
  const event = argv[4] as string;
  return agent.startsWith('-') || event.startsWith('-') ? undefined : [agent, event];
}

/** Builds the `turnback` program for one invocation; `setExit` receives the command's exit code. */
export function buildProgram(invocation: Invocation, setExit: (code: number) => void): Command {
  // The command typed (`diff`, `hooks install`), so a failure message names it, not another.
  let typed: string | undefined;
  /** Runs one command, turning thrown failures into a message and an exit code. */
  const guarded = (json: boolean | undefined, fn: (io: Io) => Promise<number>): Promise<void> => runGuarded(invocation, json, typed, setExit, fn);
  const program = new Command('turnback')
    .description('File checkpoints: a picture before a command, a change list after, and undo.')
    .version('0.1.0')
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({ writeOut: (text) => invocation.stdout.write(text), writeErr: (text) => invocation.stderr.write(text) })
    .showHelpAfterError('(turnback --help lists the commands)')
    .addHelpText('after', `${CONFIG_HELP}\n${EXIT_CODES_HELP}`)
    .hook('preAction', (_program, action) => {
      const parent = action.parent;
      typed = parent !== null && parent.parent !== null ? `${parent.name()} ${action.name()}` : action.name();
    });

  common(
    program
      .command('run')
      .description("take a picture, run CMD with this terminal, then list what changed; exits with CMD's code")
      .option('--label <label>', 'what the picture is called (default: "before CMD")')
      .option('--report <file>', "write the JSON report to FILE (stdout and stderr stay the command's)")
      .option('--unprotected', 'run CMD even when no picture can be taken (the store cannot be written)')
      .argument('<command...>', 'the command and its arguments, after --')
      .passThroughOptions()
      .usage('[--label L] [--report FILE] [--unprotected] -- CMD ARGS…'),
  ).action((argv: string[], options: RunOptions) => guarded(options.json, (io) => runCommand(argv, options, io)));

  common(program.command('list').description('pictures, newest first: label, time, how many files changed')).action((options: GlobalOptions) =>
    guarded(options.json, (io) => listCommand(options, io)),
  );

  common(
    program
      .command('show')
      .description("a picture's change list")
      .argument('<id>', 'full id or the short id from list')
      .argument('[paths...]', 'limit to these files, folders or globs'),
  ).action((id: string, paths: string[], options: GlobalOptions) => guarded(options.json, (io) => showCommand(id, paths, options, io)));

  common(
    program
      .command('diff')
      .description("what that picture's turn changed (to what the next picture saw, or the tree now); --to-now: everything since the picture")
      .argument('<id>', 'full id or the short id from list')
      .argument('[paths...]', 'limit to these files, folders or globs')
      .option('--to-now', 'compare the picture with the tree now, every change since it included'),
  ).action((id: string, paths: string[], options: DiffOptions) => guarded(options.json, (io) => diffCommand(id, paths, options, io)));

  common(
    program
      .command('undo')
      .description('bring files back to a picture: preview, confirm, restore (removes what the picture itself created and nobody changed since; --delete-created removes every file created since)')
      .argument('[id]', 'the picture (default: pick one; with --yes or --dry-run, the newest)')
      .addOption(new Option('--path <path>', 'restore only this path (a file, a folder or a glob), to its state before its latest change (repeatable)').argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]))
      .option('--yes', 'do not ask')
      .option('--dry-run', 'show the preview, change nothing')
      .option('--delete-created', 'also delete files created since the picture')
      .addOption(new Option('--force <path>', 'also write back this path though it would be refused (a write cut short, or changed since; what is there now is saved first; shown in the preview; repeatable)').argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]))
      .option('--call <tool-call-id>', "undo one agent tool call (its own changes; later calls and turns kept), by the agent's tool-call id")
      .addHelpText('after', '\nOn a terminal, bare undo opens a picker (↑/↓, Enter previews, Enter restores, Esc cancels).\nOtherwise it prints a numbered list and reads a number, then asks: restore? type y to confirm.'),
  ).action((id: string | undefined, options: UndoOptions) =>
    guarded(options.json, (io) => {
      if (options.call === undefined) return undoCommand(id, options, io);
      if (id !== undefined || options.path !== undefined) throw new CliExit(EXIT.usage, 'USAGE', '--call takes no picture id or --path');
      return revertCallCommand(options.call, options, io);
    }),
  );

  common(
    program
      .command('redo')
      .description('put files back as they were before the last undo (itself undoable)')
      .option('--yes', 'do not ask')
      .option('--dry-run', 'show the preview, change nothing'),
  ).action((options: GlobalOptions & { yes?: boolean; dryRun?: boolean }) => guarded(options.json, (io) => redoCommand(options, io)));

  common(
    program
      .command('revert')
      .description("undo only what one picture's turn changed, keeping every later turn (files a later turn changed again are listed and left)")
      .argument('<id>', 'full id or the short id from list')
      .option('--yes', 'do not ask')
      .option('--dry-run', 'show the preview, change nothing')
      .option('--delete-created', 'also delete files that turn created')
      .addOption(new Option('--force <path>', 'also write back this path though it would be refused (changed while another call ran too, a write cut short, or changed since; what is there now is saved first; repeatable)').argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value])),
  ).action((id: string, options: RevertOptions) => guarded(options.json, (io) => revertCommand(id, options, io)));

  common(program.command('status').description('on or off and why, the store, the last picture, any interrupted run')).action((options: GlobalOptions) =>
    guarded(options.json, (io) => statusCommand(options, io)),
  );
  for (const enabled of [true, false]) {
    common(
      program
        .command(enabled ? 'on' : 'off')
        .description(`switch checkpoints ${enabled ? 'on' : 'off'} for this project (kept in your user config; --project-file: in ./turnback.toml)`)
        .option('--project-file', 'keep the switch in the project\'s turnback.toml instead'),
    ).action((options: GlobalOptions & { projectFile?: boolean }) => guarded(options.json, (io) => switchCommand(enabled, options, io)));
  }
  common(program.command('prune').description('clear checkpoints past retain, keep_days and max_store_gib').option('--dry-run', 'say what would be cleared, remove nothing')).action(
    (options: GlobalOptions & { dryRun?: boolean }) => guarded(options.json, (io) => pruneCommand(options, io)),
  );
  common(program.command('verify').description('check every stored object and manifest')).action((options: GlobalOptions) =>
    guarded(options.json, (io) => verifyCommand(options, io)),
  );
  common(
    program
      .command('push')
      .description('send the checkpoints the remote store (dir = "s3://…") lacks: copies first, then the pictures naming them')
      .addOption(new Option('--background', 'as at the end of a turn: one at a time, failures to the remote log').hideHelp()),
  ).action((options: PushOptions) =>
    guarded(options.json, (io) => pushCommand(options, io)),
  );
  common(program.command('pull').description("bring this project's checkpoints from the remote store (dir = \"s3://…\"), all or one agent session's").argument('[session]', 'only this session (as turnback list shows it)')).action(
    (session: string | undefined, options: GlobalOptions) => guarded(options.json, (io) => pullCommand(session, options, io)),
  );
  common(program.command('drop').description('remove one picture (its copies go at the next prune unless another picture uses them)').argument('<id>', 'full id or a prefix of 4+ characters')).action(
    (id: string, options: GlobalOptions) => guarded(options.json, (io) => dropCommand(id, options, io)),
  );
  common(program.command('acp').description('run an ACP agent behind a proxy that adds checkpoints: turnback acp -- AGENT ARGS…').argument('<command...>', 'the agent and its arguments, after --').passThroughOptions()).action(
    (argv: string[], options: GlobalOptions) => guarded(false, (io) => acpCommand(argv, options, io)),
  );
  common(program.command('mcp').description('serve this project over MCP on stdin/stdout: undo_savepoint, list_checkpoints, diff_checkpoint, restore_checkpoint')).action((options: GlobalOptions) =>
    guarded(false, (io) => mcpCommand(options, io)),
  );
  const hooks = program.command('hooks').description("install turnback's hooks into a coding agent (claude, codex, gemini, qwen, cursor, copilot), remove them, or see them");
  for (const [action, describe] of [
    ['install', "merge turnback's hooks into AGENT's configuration (the project's by default; --user: yours); running it twice changes nothing"],
    ['uninstall', 'remove exactly the hooks install added'],
  ] as const) {
    const command = hooks
      .command(action)
      .description(describe)
      .argument('<agent>', 'claude, codex, gemini, qwen, cursor or copilot')
      .option('--user', "your own configuration (every project), not the project's")
      .addOption(new Option('--project-scope', "the project's configuration (the default)").conflicts('user'));
    if (action === 'install') {
      command.option('--codex-feature', "codex: also turn Codex's hooks feature on in its config.toml ([features] hooks = true)");
      command.option('--command-hooks', "claude: every event a command hook, in the committed settings.json (for a team), not HTTP hooks in this machine's settings.local.json");
    }
    common(command).action((agent: string, options: HooksOptions) => guarded(options.json, (io) => (action === 'install' ? hooksInstallCommand(agent, options, io) : hooksUninstallCommand(agent, options, io))));
  }
  common(hooks.command('status').description('per agent: whether its hooks are installed, and when they last fired or failed')).action((options: GlobalOptions) => guarded(options.json, (io) => hooksStatusCommand(options, io)));
  common(
    program
      .command('hook')
      .description("what an installed hook runs: reads the agent's JSON payload on stdin; always exits 0 (failures go to the hook log)")
      .argument('<agent>', 'the agent')
      .argument('<event>', "the agent's event name"),
  ).action((agent: string, event: string, options: GlobalOptions) => guarded(false, (io) => hookCommand(agent, event, options, io)));
  program
    .command('server')
    .description('the command servers that keep commands fast: status, start (returns once it listens) or stop')
    .argument('[action]', 'status (default: every server of this user), start or stop (this build\'s)')
    .option('--all', 'with stop: stop every server of this user, of every build and version')
    .option('--json', 'print one JSON document on stdout, for scripts')
    .action((action: string | undefined, options: { json?: boolean; all?: boolean }) => guarded(options.json, (io) => serverCommand(action, io, { ...(options.all === true ? { all: true } : {}) })));
  common(program.command('config').description('the configuration in effect: every [checkpoints] key, its value and where it came from')).action((options: GlobalOptions) =>
    guarded(options.json, (io) => configCommand(options, io)),
  );
  return program;
}

/**
 * Runs one command line (`argv` as `process.argv` gives it: node, script, arguments) for
 * `invocation`, and returns its exit code. Never rejects for the command's own failures.
 */
export async function execute(argv: readonly string[], invocation: Invocation): Promise<number> {
  let exitCode: number = EXIT.ok;
  const hook = bareHook(argv);
  if (hook !== undefined) {
    // The hook's action as the program would call it (no option given: none set), without
    // building the program (~1 ms, per served command, on every hook event).
    try {
      await runGuarded(invocation, false, 'hook', (code) => (exitCode = code), (io) => hookCommand(hook[0], hook[1], {}, io));
    } finally {
      await closeOpenedStores(invocation);
    }
    return exitCode;
  }
  const program = buildProgram(invocation, (code) => (exitCode = code));
  try {
    await program.parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      const ok = error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help';
      return ok ? EXIT.ok : EXIT.usage;
    }
    throw error;
  } finally {
    await closeOpenedStores(invocation);
  }
  return exitCode;
}

/** The entry point of a command run in this process: parses `argv` and sets `process.exitCode`. */
export async function main(argv: string[] = process.argv): Promise<void> {
  if (argv[2] === SERVE_FLAG) {
    await serveForever(argv[3] ?? '', (served, seam) => execute(served, invocationOf(seam)));
    return;
  }
  // `turnback list | head` closes the pipe early: stop quietly, as other commands do, not with a trace.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit(typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok);
  });
  // This command found no server and started one (client.ts): the projects it pictures are that server's to start watching.
  const launched = (globalThis as Record<symbol, unknown>)[LAUNCHED_SERVER];
  if (typeof launched === 'string') hintWatchers((root) => void sendWatchHint(launched, root));
  process.exitCode = await execute(argv, processInvocation());
}

// Not a top-level await: the command is built as CommonJS (see tsup.config.ts).
void main();
