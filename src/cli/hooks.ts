import { appendFile, mkdir, rm, rmdir, stat } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import writeFileAtomic from 'write-file-atomic';
import {
  AGENTS,
  agentSessionId,
  applyHookEvent,
  codexHooksFeature,
  enableCodexHooks,
  indentationOf,
  installedEvents,
  installHooks,
  isAgentName,
  parseHookEvent,
  uninstallHooks,
  type AgentSpec,
  type HookJsonObject,
} from '../hooks.js';
import { shownPath, shownText } from '../report/escape.js';
import { servedProject } from '../server/idle-copies.js';
import { openObserver } from '../admin.js';
import { loadContext, openStore, type CliContext, type GlobalOptions } from './context.js';
import { EXIT } from './exit-codes.js';
import { CliExit, describeFailure, type Io } from './io.js';
import { startBackgroundPush } from './background-push.js';
import { hookContext } from './hook-project.js';
import { readRegularText } from '../fs/regular-file.js';
import { realPathInside } from '../fs/contained-path.js';
import { isCheckpointError } from '../core/errors.js';
import { HOOK_LEAVE_MS, readHookInput } from './hook-input.js';
import { hookCommandLine, turnbackOnPathIsThis } from './hook-command.js';
import { codexConfigPath, trustGapOf } from './hook-trust.js';
import { httpPlanFor, keepOutOfGit, undoIgnoreEdit, type IgnoreEdit } from './hook-http.js';

// `turnback hooks install|uninstall|status` and `turnback hook AGENT EVENT`, the command the
// installed hooks run (see src/hooks/ for what each event does).

/** Options of `hooks install` and `hooks uninstall`. */
export interface HooksOptions extends GlobalOptions {
  user?: boolean;
  projectScope?: boolean;
  /** Codex: also turn its `hooks` feature on in its config.toml. */
  codexFeature?: boolean;
  /** Claude Code: every event a command hook, in the usual file, not HTTP hooks in this machine's own. */
  commandHooks?: boolean;
}


function agentOf(name: string): AgentSpec {
  if (!isAgentName(name)) throw new CliExit(EXIT.usage, 'USAGE', `unknown agent ${name}: one of ${Object.keys(AGENTS).join(', ')}`);
  return AGENTS[name];
}

/** The folder a scope's files must stay in: the project, or the user's (home, or `$CODEX_HOME` for Codex). */
function scopeRoot(spec: AgentSpec, context: CliContext, user: boolean): string {
  if (!user) return context.projectRoot;
  if (spec.name === 'codex' && process.env.CODEX_HOME !== undefined && process.env.CODEX_HOME !== '') return process.env.CODEX_HOME;
  return homeFolder();
}

/** The hook file of `spec` in the chosen scope. */
export function hookFile(spec: AgentSpec, context: CliContext, user: boolean): string {
  if (!user) return path.join(context.projectRoot, spec.files.project);
  if (spec.name === 'codex' && process.env.CODEX_HOME !== undefined && process.env.CODEX_HOME !== '') return path.join(process.env.CODEX_HOME, 'hooks.json');
  return path.join(homeFolder(), spec.files.user);
}

/**
 * Where install and uninstall may really read and write `file`: its real path, when no symlink on
 * the way leads out of `root`. A link that stays inside is followed (a project that keeps its
 * agent folder elsewhere in the tree).
 *
 * @throws CliExit `OUTSIDE_ROOT` naming the link and where it leads; nothing is read or changed.
 */
async function writableTarget(root: string, file: string): Promise<string> {
  try {
    return await realPathInside(root, file);
  } catch (error) {
    if (isCheckpointError(error, 'OUTSIDE_ROOT')) throw new CliExit(EXIT.error, 'OUTSIDE_ROOT', `${shownText(error.message)}; nothing was changed`);
    throw error;
  }
}

/** `file`, and where it really is when a link inside the scope leads elsewhere. */
function shownTarget(file: string, real: string): string {
  return real === file ? shownPath(file) : `${shownPath(file)} (a link to ${shownPath(real)})`;
}

/** The file's JSON object and its text, or an empty object when the file does not exist. */
export async function readSettings(file: string): Promise<{ settings: HookJsonObject; text: string | undefined }> {
  let text: string;
  try {
    text = await readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { settings: {}, text: undefined };
    throw new CliExit(EXIT.error, 'HOOK_FILE', `cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = text.trim().length === 0 ? {} : (JSON.parse(text) as unknown);
  } catch {
    // Never rewrite a file turnback cannot read whole: that would lose what it holds.
    throw new CliExit(EXIT.error, 'HOOK_FILE', `${file} is not JSON turnback can read (comments?); nothing was changed`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new CliExit(EXIT.error, 'HOOK_FILE', `${file} does not hold a JSON object; nothing was changed`);
  return { settings: parsed as HookJsonObject, text };
}

/** Writes the agent's file; `ownerOnly` makes a new one readable by its owner alone (it holds the hooks' secret). */
async function writeSettings(file: string, settings: HookJsonObject, previousText: string | undefined, ownerOnly = false): Promise<{ text: string; createdFolder: string | undefined }> {
  const createdFolder = await mkdir(path.dirname(file), { recursive: true });
  const text = `${JSON.stringify(settings, null, previousText === undefined ? 2 : indentationOf(previousText))}\n`;
  await writeFileAtomic(file, text, ownerOnly && previousText === undefined ? { mode: 0o600 } : {});
  return { text, createdFolder };
}

/**
 * Where install keeps a hook file's text from before it, with the text it wrote: in turnback's
 * own data folder (never beside the agent's file), keyed by the file's path.
 */
function installRecordPath(file: string): string {
  const base = process.env.XDG_DATA_HOME !== undefined && path.isAbsolute(process.env.XDG_DATA_HOME) ? process.env.XDG_DATA_HOME : path.join(homeFolder(), '.local', 'share');
  return path.join(base, 'turnback', 'hook-installs', `${createHash('sha256').update(file).digest('hex').slice(0, 24)}.json`);
}

/** Removes `from` and its parents up to `top` (the first folder install made), each only while empty. */
async function removeEmptyFolders(from: string, top: string | undefined): Promise<void> {
  if (top === undefined) return;
  for (let at = from; at === top || at.startsWith(`${top}${path.sep}`); at = path.dirname(at)) {
    try {
      await rmdir(at);
    } catch {
      return;
    }
  }
}

/** The text a file held without turnback's hooks: its own bytes when it held none, else the hooks taken out. */
function beforeText(spec: AgentSpec, settings: HookJsonObject, text: string | undefined): string | null {
  if (text === undefined) return null;
  if (installedEvents(spec, settings).length === 0) return text;
  const without = uninstallHooks(spec, settings).settings;
  return without === undefined ? null : `${JSON.stringify(without, null, indentationOf(text))}\n`;
}

/** What install wrote into `file` and what the file held before, when install recorded it. */
async function readInstallRecord(file: string): Promise<{ file: string; before: string | null; installed: string; createdFolder?: string; ignore?: IgnoreEdit } | undefined> {
  try {
    const record = JSON.parse(await readRegularText(installRecordPath(file))) as { file?: unknown; before?: unknown; installed?: unknown; createdFolder?: unknown; ignore?: Partial<IgnoreEdit> };
    if (record.file !== file || typeof record.installed !== 'string' || (record.before !== null && typeof record.before !== 'string')) return undefined;
    const createdFolder = typeof record.createdFolder === 'string' && file.startsWith(`${record.createdFolder}${path.sep}`) ? record.createdFolder : undefined;
    const { ignore } = record;
    const ignored = ignore !== undefined && ignore.file === path.join(path.dirname(file), '.gitignore') && typeof ignore.created === 'boolean' && ignore.line === path.basename(file) ? (ignore as IgnoreEdit) : undefined;
    return { file, before: record.before, installed: record.installed, ...(createdFolder !== undefined ? { createdFolder } : {}), ...(ignored !== undefined ? { ignore: ignored } : {}) };
  } catch {
    return undefined;
  }
}

/** `turnback hooks install AGENT [--user | --project] [--command-hooks]`. */
export async function hooksInstallCommand(name: string, options: HooksOptions, io: Io): Promise<number> {
  const spec = agentOf(name);
  const context = await loadContext(options, io.invocation);
  const user = options.user === true;
  // An agent that runs HTTP hooks gets them for its tool events, in this machine's own file.
  const plan = options.commandHooks === true ? undefined : await httpPlanFor(spec, context.projectRoot, user, hookFile(spec, context, true));
  const http = plan !== undefined && 'file' in plan ? plan : undefined;
  const named = http?.file ?? hookFile(spec, context, user);
  const file = await writableTarget(scopeRoot(spec, context, user), named);
  const { settings, text } = await readSettings(file);
  let result;
  try {
    // This machine's own file runs this Node and this turnback by path, as the user's own file does.
    result = installHooks(spec, settings, (event) => hookCommandLine(spec.name, event, user || http !== undefined), http?.target);
  } catch (error) {
    throw new CliExit(EXIT.error, 'HOOK_FILE', `${file}: ${(error as Error).message}; nothing was changed`);
  }
  if (result.added.length > 0) {
    const previous = await readInstallRecord(file);
    const written = await writeSettings(file, result.settings, text, http !== undefined);
    // So uninstall can give back the very bytes the file held (a re-install keeps the first "before"),
    // and take away the folders install made for it.
    const same = previous !== undefined && previous.installed === text;
    const before = same ? previous.before : beforeText(spec, settings, text);
    const createdFolder = same ? previous.createdFolder : written.createdFolder;
    // The local file holds the secret: git must not take it into a commit.
    const ignore = http !== undefined && !user ? ((await keepOutOfGit(context.projectRoot, file)) ?? previous?.ignore) : undefined;
    const record = installRecordPath(file);
    await mkdir(path.dirname(record), { recursive: true, mode: 0o700 });
    await writeFileAtomic(record, `${JSON.stringify({ file, before, installed: written.text, ...(createdFolder !== undefined ? { createdFolder } : {}), ...(ignore !== undefined ? { ignore } : {}) })}\n`, { mode: 0o600 });
  }
  // A project's two files never both hold turnback's hooks (every event would run twice): the
  // committed one gives them up when they go in this machine's own, and the other way round.
  const other = user || spec.http === undefined ? undefined : http !== undefined ? hookFile(spec, context, false) : path.join(context.projectRoot, spec.http.localFile);
  const moved = other !== undefined ? await uninstallFrom(spec, context.projectRoot, other) : [];
  // Hooks the agent will skip without a word until the person trusts them: said, with the step.
  const gap = await trustGapOf(spec, { projectRoot: context.projectRoot, user, hookFile: file, changed: result.added.length > 0 });
  const httpEvents = http === undefined ? [] : Object.keys(spec.events).filter((event) => http.target(event) !== undefined);
  io.emit({ agent: spec.name, file: named, ...(file !== named ? { target: file } : {}), added: result.added, http: httpEvents, ...(plan !== undefined && 'refused' in plan ? { httpRefused: plan.refused } : {}), note: spec.installNote ?? null, untrusted: gap ?? null });
  if (result.added.length === 0) io.out(`turnback: ${spec.title}'s hooks are installed already in ${shownTarget(named, file)}: nothing changed`);
  else io.out(`turnback: added to ${shownTarget(named, file)}: ${result.added.join(', ')}`, `  every prompt of ${spec.title} is now a turn, and its tool calls are pictured; \`turnback list\` shows them`);
  if (http !== undefined) io.out(`  ${httpEvents.join(', ')}: HTTP hooks to the command server (127.0.0.1:${http.endpoint.port}, with your secret), no process per tool call; this file is this machine's alone`);
  else if (plan !== undefined && 'refused' in plan) io.out(`  note: command hooks, not HTTP hooks: ${shownText(plan.refused)}`);
  if (other !== undefined && moved.length > 0) io.out(`  taken out of ${shownPath(other)}: ${moved.join(', ')} (they would run twice)`);
  if (!user && http === undefined && !turnbackOnPathIsThis(process.env.PATH)) {
    io.out('  note: `turnback` on PATH is not this install, so the hooks run `npx turnback` (the project\'s own turnback, else npm\'s): `npm install -g turnback` (or the project\'s devDependencies) makes them run without a download');
  }
  if (spec.name === 'codex') await codexFeature(options, io, scopeRoot(spec, context, true));
  else if (spec.installNote !== undefined) io.out(`  note: ${spec.installNote}`);
  if (spec.feedbackLimit !== undefined) io.out(`  note: ${spec.feedbackLimit}`);
  if (gap !== undefined) io.out(`  not yet running: ${shownText(gap.why)}; to trust them: ${shownText(gap.step)}`);
  return EXIT.ok;
}


/** Says whether Codex will run the hooks, and with `--codex-feature` turns its `hooks` feature on. */
async function codexFeature(options: HooksOptions, io: Io, userRoot: string): Promise<void> {
  const file = await writableTarget(userRoot, codexConfigPath());
  let text: string | undefined;
  try {
    text = await readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new CliExit(EXIT.error, 'HOOK_FILE', `cannot read ${file}: ${(error as Error).message}`);
  }
  let state: boolean | undefined;
  try {
    state = codexHooksFeature(text);
  } catch {
    throw new CliExit(EXIT.error, 'HOOK_FILE', `${file} is not TOML turnback can read; nothing was changed there`);
  }
  if (options.codexFeature === true) {
    let edit: { text: string; changed: boolean };
    try {
      edit = enableCodexHooks(text);
    } catch (error) {
      throw new CliExit(EXIT.error, 'HOOK_FILE', `${file}: ${(error as Error).message}`);
    }
    if (edit.changed) {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFileAtomic(file, edit.text);
      io.out(`turnback: turned Codex's hooks feature on in ${shownPath(file)} ([features] hooks = true)`);
    } else io.out(`turnback: Codex's hooks feature is on already in ${shownPath(file)}`);
    return;
  }
  if (state === false) io.out(`  note: Codex's hooks feature is off in ${shownPath(file)}, so Codex will not run these hooks: \`turnback hooks install codex --codex-feature\` turns it on`);
  else io.out(`  note: ${AGENTS.codex.installNote ?? ''} (\`--codex-feature\` sets it)`);
}

/**
 * Takes turnback's hooks out of `named` (within `root`): the very bytes it held before install
 * when it is untouched since, else exactly turnback's entries. The events it took out.
 */
async function uninstallFrom(spec: AgentSpec, root: string, named: string): Promise<string[]> {
  const file = await writableTarget(root, named);
  const { settings, text } = await readSettings(file);
  const result = uninstallHooks(spec, settings);
  const record = await readInstallRecord(file);
  if (text !== undefined && result.removed.length > 0) {
    if (record?.ignore !== undefined) await undoIgnoreEdit(record.ignore);
    if (record !== undefined && record.installed === text) {
      // Untouched since install: the file goes back to its very bytes (or away, if install made it).
      if (record.before === null) {
        await rm(file, { force: true });
        await removeEmptyFolders(path.dirname(file), record.createdFolder);
      } else await writeFileAtomic(file, record.before);
    } else if (result.settings === undefined) await rm(file, { force: true });
    else await writeSettings(file, result.settings, text);
  }
  if (record !== undefined) await rm(installRecordPath(file), { force: true });
  return result.removed;
}

/** `turnback hooks uninstall AGENT [--user | --project]`: from the agent's file, and from this machine's own file of the project where HTTP hooks went. */
export async function hooksUninstallCommand(name: string, options: HooksOptions, io: Io): Promise<number> {
  const spec = agentOf(name);
  const context = await loadContext(options, io.invocation);
  const user = options.user === true;
  const files = [hookFile(spec, context, user), ...(!user && spec.http !== undefined ? [path.join(context.projectRoot, spec.http.localFile)] : [])];
  const rows: { file: string; removed: string[] }[] = [];
  for (const named of files) {
    const removed = await uninstallFrom(spec, scopeRoot(spec, context, user), named);
    if (removed.length > 0 || named === files[0]) rows.push({ file: named, removed });
  }
  io.emit({ agent: spec.name, file: files[0], removed: rows.flatMap((row) => row.removed), files: rows });
  for (const row of rows) if (row.removed.length > 0 || rows.length === 1) io.out(row.removed.length === 0 ? `turnback: no turnback hooks in ${shownPath(row.file)}` : `turnback: removed from ${shownPath(row.file)}: ${row.removed.join(', ')}`);
  return EXIT.ok;
}

/** One line of the hook log. */
interface HookLogLine {
  at: string;
  agent: string;
  event: string;
  session?: string;
  ok: boolean;
  action?: string;
  error?: string;
  /** The failure's typed code (`INVALID_PATH`, `STORE_BUSY`, …; `ERROR` for an untyped one). */
  code?: string;
  ms: number;
}

/** The hook log, beside the store (it must be writable when the store is not). */
export function hookLogPath(context: Pick<CliContext, 'storeDir'>): string {
  return `${context.storeDir}.hooks.log`;
}

/** The log is cut back to its newest half past this size. */
const LOG_MAX_BYTES = 1024 * 1024;

async function appendLog(context: CliContext, line: HookLogLine): Promise<void> {
  const file = hookLogPath(context);
  try {
    await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await appendFile(file, `${JSON.stringify(line)}\n`, { mode: 0o600 });
    if ((await stat(file)).size > LOG_MAX_BYTES) {
      const text = await readRegularText(file);
      const keep = text.slice(text.indexOf('\n', text.length - LOG_MAX_BYTES / 2) + 1);
      await writeFileAtomic(file, keep, { mode: 0o600 });
    }
  } catch {
    // Even the log may be unwritable (a full disk): the agent still goes ahead.
  }
}

/** The hook log's lines for `context`'s store, oldest first (none when there is no log). */
export async function readLog(context: CliContext): Promise<HookLogLine[]> {
  try {
    return (await readRegularText(hookLogPath(context)))
      .split('\n')
      .filter((l) => l.length > 0)
      .flatMap((l) => {
        try {
          return [JSON.parse(l) as HookLogLine];
        } catch {
          return [];
        }
      });
  } catch {
    return [];
  }
}


/**
 * The payload on stdin: read by the client (relayed when served, handed over when it runs the
 * hook itself), else read here the same bounded way. A payload turnback could not have whole is
 * a gap: thrown, so it is logged as the event's failure.
 */
async function payloadOf(io: Io): Promise<string> {
  const read = io.invocation.input !== undefined ? { text: io.invocation.input, ...(io.invocation.inputGap !== undefined ? { gap: io.invocation.inputGap } : {}) } : io.invocation.stdin === undefined ? { text: '' } : await readHookInput(io.invocation.stdin);
  if (read.gap !== undefined) throw new CliExit(EXIT.error, 'HOOK_PAYLOAD', read.gap);
  return read.text;
}

/**
 * `turnback hook AGENT EVENT`: what an installed hook runs. Never blocks the agent: whatever
 * happens it exits 0 and prints nothing but, at a turn's end for an agent that shows one, a JSON
 * `systemMessage`; every failure goes to the hook log (`turnback hooks status` shows it).
 */
export async function hookCommand(name: string, eventName: string, options: GlobalOptions, io: Io): Promise<number> {
  const started = Date.now();
  let context: CliContext | undefined;
  let session: string | undefined;
  try {
    const spec = agentOf(name);
    const payload = await payloadOf(io);
    const event = parseHookEvent(spec, eventName, payload, io.invocation.cwd);
    session = event.session;
    // The project of the agent's folder (its git toplevel, as a command started there finds),
    // not of wherever the hook process happened to start; a folder that is no project is
    // answered at once.
    const found = await hookContext(spec, event.cwd ?? io.invocation.cwd, options, io.invocation);
    context = found.context;
    // Checkpoints off, or no project here: nothing at all is touched, not even the log.
    if (found.refusal !== undefined || !context.config.enabled) return EXIT.ok;
    // Served: the client learns by when this hook is done; one that gave up waiting runs it itself.
    const deadline = (io.invocation.startedAt ?? started) + context.config.resolved.maxPictureSeconds * 1000;
    if (io.invocation.accept?.({ deadline, log: hookLogPath(context) }) === false) return EXIT.ok;
    const store = await openStore(context);
    // One budget for the whole event: the pictures of the calls it ends and the one it begins
    // share `max_picture_seconds`, counted from the hook's start, and end when a served hook's
    // client leaves (the agent goes ahead then), as does the wait for other events' store lock.
    const workDeadline = deadline - HOOK_LEAVE_MS;
    const observer = openObserver(store, { config: context.config.resolved, sessionId: agentSessionId(spec.name, event.session), ownerPid: context.invocation.pid, pictureDeadline: workDeadline });
    servedProject(store.root, store.projectRoot);
    let outcome;
    try {
      outcome = await applyHookEvent(observer, event, { deadline: workDeadline, budgetSeconds: context.config.resolved.maxPictureSeconds, agent: spec });
    } finally {
      await observer.close().catch(() => undefined);
    }
    await appendLog(context, { at: new Date().toISOString(), agent: spec.name, event: eventName, session, ok: true, action: outcome.action, ms: Date.now() - started });
    // A turn's end: on its way to the remote store, if there is one, without the agent waiting.
    if (event.kind === 'stop' || event.kind === 'session-end') startBackgroundPush(context);
    if (outcome.message !== undefined && spec.feedback === 'system-message') io.invocation.stdout.write(`${JSON.stringify({ systemMessage: outcome.message })}\n`);
  } catch (error) {
    const described = describeFailure(error);
    const code = described.reason;
    // The log says what was not recorded, and why (a person's "try again" means nothing to an agent's hook).
    const failure = isCheckpointError(error, 'STORE_BUSY') ? error.message : described.message;
    if (context === undefined) {
      try {
        context = await loadContext(options, io.invocation);
      } catch {
        return EXIT.ok;
      }
    }
    if (context.refusal === undefined && context.config.enabled) {
      // A store that cannot be opened fails every event: the agent's stderr hears it once (the
      // first event failing so), not only the hook log.
      const previous = (await readLog(context)).filter((line) => line.agent === name).at(-1);
      if (isCheckpointError(error, 'STORE_UNAVAILABLE') && !(previous?.ok === false && previous.error === failure)) {
        io.invocation.stderr.write(`turnback: no checkpoints for this project: ${shownText(failure)}${context.storeFrom === 'TURNBACK_DIR' ? ' (the folder TURNBACK_DIR names)' : ''}; every hook event fails until it is fixed (turnback hooks status)\n`);
      }
      await appendLog(context, { at: new Date().toISOString(), agent: name, event: eventName, ...(session !== undefined ? { session } : {}), ok: false, error: failure, code, ms: Date.now() - started });
    }
  }
  return EXIT.ok;
}
