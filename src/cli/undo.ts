import * as path from 'node:path';
import type { CheckpointId, CheckpointMeta, CheckpointObserver, StoreView, RestorePlan, RestoreReport } from '../index.js';
import { buildUndoPreview, renderCancelledReceipt, renderReceipt, renderUndoPreview, skippedSummary, type UndoPreview } from '../report/preview.js';
import { loadContext, observerFor, openStore, storeExists, type CliContext, type GlobalOptions } from './context.js';
import { isYes, LineReader, parsePick, TerminalPicker } from './dialogue.js';
import { EXIT } from './exit-codes.js';
import { handleInterrupted, printInterrupted, refuseWhileRunning } from './interrupted.js';
import { CliExit, type Io } from './io.js';
import { shownPath, shownText } from '../report/escape.js';
import { pathMatcher } from './path-patterns.js';
import { bareUndoTarget, emptyLastPicture, redoStack } from './undo-stack.js';
import { agentTurns, endOpenAgentCalls, sessionScope, turnsAsTargets } from './agent-turns.js';
import { parseAgentSessionId } from '../hooks.js';
import { rowsShown } from '../report/folding.js';
import { callNotesSince, displayLabel, displayTime, latestCheckpointFor, resolveId, shortId, shortLabel, stateText, undoablePictures, withoutBefore, type Picture } from './pictures.js';

/** Options of `turnback undo`. */
export interface UndoOptions extends GlobalOptions {
  path?: string[];
  yes?: boolean;
  dryRun?: boolean;
  deleteCreated?: boolean;
  force?: string[];
  /** `--call TOOL_CALL_ID`: undo one agent tool call (a revert of its checkpoint). */
  call?: string;
}

/** One restore to make: a checkpoint and, optionally, the paths to limit it to. */
export interface Step {
  meta: CheckpointMeta;
  label: string;
  paths?: string[];
  force?: string[];
  plan: RestorePlan;
  preview: UndoPreview;
  /** What the runs in the span did beyond files (git's HEAD moved, files staged): a file restore leaves it. */
  notes?: string[];
  /** An agent turn's undo beside other agents' sessions: what it leaves to them, and what it refuses (see `sessionScope`). */
  aside?: { left: { path: string; by: string }[]; refused: { path: string; why: string }[] };
}

/**
 * The step that undoes `meta`: for an agent's turn while other agents' sessions worked in the
 * project too, only that session's own changes (theirs left, the ones both could have made
 * refused unless forced); else the restore to `meta`.
 */
async function undoStep(io: Io, store: StoreView, observer: CheckpointObserver, meta: CheckpointMeta, created: 'keep' | 'delete' | 'own', maxFileMib: number, forced: string[] | undefined, maxRows: number): Promise<Step> {
  const scope = await sessionScope(store, meta, forced ?? []);
  if (scope === undefined) return planStep(observer, meta, created, undefined, maxFileMib, undefined, forced);
  if (scope.paths.length === 0) {
    showAside(io, scope, maxRows);
    io.emit({ restored: false, reason: 'nothing-own', left: scope.left, refused: scope.refused });
    throw new CliExit(EXIT.nothing, 'NOTHING', `nothing to undo: every file ${displayLabel(meta)} changed was changed by another agent too, or while its call ran`);
  }
  const title = `undo ${displayLabel(meta)} (this agent's own changes; other agents' kept)`;
  const step = await planStep(observer, meta, created, scope.paths, maxFileMib, title, forced);
  return { ...step, aside: { left: scope.left, refused: scope.refused } };
}

/**
 * A user path (relative to the current folder, or absolute) as a project path. `command` is
 * the command the person typed, which the refusal names.
 *
 * @throws CliExit (usage) when it is outside the project.
 */
export function projectPathOf(projectRoot: string, input: string, cwd: string, command = 'undo'): string {
  const relative = path.relative(projectRoot, path.resolve(cwd, input));
  if (relative === '' || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
    throw new CliExit(EXIT.usage, 'OUTSIDE_ROOT', `${command} takes a path inside the project (${input})`);
  }
  return relative.split(path.sep).join('/');
}

function pictureLine(meta: Picture): string {
  const files = `${meta.entryCount} ${meta.entryCount === 1 ? 'file' : 'files'}`;
  const state = stateText(meta.state);
  return `${shortId(meta.id)}  ${displayLabel(meta)} · ${displayTime(meta.shownAt)}   (${files}${state === '' ? '' : `; ${state}`})`;
}

/** The context, store and observer of a command that restores (exit 3 when there is no store). */
export async function openForRestore(options: GlobalOptions, io: Io): Promise<{ context: CliContext; store: StoreView; observer: CheckpointObserver }> {
  const context = await loadContext(options, io.invocation);
  if (context.refusal !== undefined) io.err(`turnback: checkpoints are off: ${context.refusal}`);
  if (!(await storeExists(context))) throw new CliExit(EXIT.nothing, 'NOTHING', 'no checkpoints in this project');
  const store = await openStore(context);
  const interrupted = await handleInterrupted(context, store, true);
  if (!io.json) printInterrupted(io, context, interrupted);
  refuseWhileRunning(interrupted);
  return { context, store, observer: observerFor(context, store) };
}

/** Plans one restore step and builds its preview. */
export async function planStep(observer: CheckpointObserver, meta: CheckpointMeta, created: 'keep' | 'delete' | 'own', paths: string[] | undefined, maxFileMib: number, title?: string, force?: string[]): Promise<Step> {
  const plan = await observer.plan(meta.id, { created, modePolicy: 'exact', ...(paths !== undefined ? { paths } : {}), ...(force !== undefined ? { force } : {}) });
  const label = displayLabel(meta);
  const preview = buildUndoPreview(label, plan.entries, maxFileMib, title);
  return { meta, label, ...(paths !== undefined ? { paths } : {}), ...(force !== undefined ? { force } : {}), plan, preview };
}

/** Asks before restoring: Enter on a terminal, `y` on a pipe. `--yes` skips it. */
export async function confirm(io: Io, options: { yes?: boolean }, reader: () => LineReader): Promise<boolean> {
  if (options.yes === true) return true;
  if (io.json) throw new CliExit(EXIT.usage, 'USAGE', '--json needs --yes or --dry-run to restore (there is no one to ask)');
  const person = personOf(io);
  if (person.input.isTTY === true && person.output.isTTY === true) {
    return new TerminalPicker(person.input, person.output).confirm([], 'Enter restores · Esc cancels');
  }
  return isYes(await reader().ask(person.output, 'restore? type y to confirm '));
}

/**
 * The person's input and terminal, for a command that asks. A served command has none (the
 * client relays only output): it never reaches here, because the client serves only commands
 * that do not ask.
 */
export function personOf(io: Io): { input: NodeJS.ReadStream; output: NodeJS.WriteStream } {
  const { stdin, terminal } = io.invocation;
  if (stdin === undefined || terminal === undefined) throw new CliExit(EXIT.usage, 'USAGE', 'there is no one to ask here: add --yes or --dry-run');
  return { input: stdin, output: terminal };
}

/** Which command restores: it names the save each restore makes first. */
export type RestoreVerb = 'undo' | 'redo' | 'revert';

/** Applies the previewed steps, each bound to its preview; prints the receipts. */
export async function applySteps(io: Io, context: CliContext, observer: CheckpointObserver, steps: readonly Step[], created: 'keep' | 'delete' | 'own', verb: RestoreVerb = 'undo'): Promise<number> {
  const reports: { checkpoint: string; label: string; report: RestoreReport }[] = [];
  let failed = false;
  // Ctrl-C (or a TERM or HUP) during the restore cancels it before its commit point, which rolls
  // back what it wrote; past that point it finishes. Either way the tree is whole and no
  // `.turnback-*` file is left: the process ends only when the restore has.
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!abort.signal.aborted) io.err(`turnback: ${signal}: cancelling the restore (what it wrote is rolled back)`);
    abort.abort(new DOMException(`cancelled by ${signal}`, 'AbortError'));
  };
  const stopListening = io.invocation.onInterrupt(onSignal);
  try {
    for (const step of steps) {
      if (abort.signal.aborted) break;
      const report = await observer.restore(step.meta.id as CheckpointId, {
        created,
        modePolicy: 'exact',
        ...(step.paths !== undefined ? { paths: step.paths } : {}),
        ...(step.force !== undefined ? { force: step.force } : {}),
        expect: step.plan,
        saveLabel: verb === 'redo' ? 'before redo' : shortLabel(`before ${verb} of ${withoutBefore(step.label)}`),
        signal: abort.signal,
      });
      reports.push({ checkpoint: step.meta.id, label: step.label, report });
      // Cancelled before its commit point: rolled back, so nothing failed and nothing needs undoing.
      if (isCancelled(report)) io.out(...renderCancelledReceipt(step.label, report, io.style));
      else io.out(...renderReceipt(step.label, report, io.style, { maxFileMib: context.config.resolved.maxFileMib, maxRows: context.maxRows }));
      if (report.failed.length > 0 && !isCancelled(report)) failed = true;
    }
  } finally {
    stopListening();
  }
  await observer.close();
  const rolledBack = reports.some(({ report }) => isCancelled(report));
  // A file left behind is never only a row among others: the last line counts them, and the exit says so.
  const skipped = rolledBack ? undefined : skippedSummary(reports.map(({ report }) => report), context.config.resolved.maxFileMib);
  if (skipped !== undefined) io.out(io.style.warn(skipped));
  io.emit({ restored: !rolledBack, cancelled: rolledBack, restores: reports, ...(skipped !== undefined ? { notBroughtBack: skipped } : {}) });
  if (rolledBack) {
    io.err('turnback: cancelled, nothing changed: the restore was cancelled and rolled back, the files are as they were before it');
    // The shell's convention for a command ended by Ctrl-C.
    return 130;
  }
  return failed ? EXIT.error : skipped !== undefined ? EXIT.skipped : EXIT.ok;
}

/** True for a restore a signal cancelled before its commit point (and so rolled back). */
function isCancelled(report: RestoreReport): boolean {
  return report.failed.some((failure) => failure.code === 'ABORT_ERR');
}

/** The paths of `meta`'s plan that `patterns` (files, folders, globs) match; exits when none does. */
async function matchingInPlan(observer: CheckpointObserver, meta: CheckpointMeta, created: 'keep' | 'delete' | 'own', patterns: string[]): Promise<string[]> {
  const matches = pathMatcher(patterns);
  const plan = await observer.plan(meta.id as CheckpointId, { created, modePolicy: 'exact' });
  const chosen = plan.entries.map((entry) => entry.path).filter(matches);
  if (chosen.length === 0) throw new CliExit(EXIT.nothing, 'NOTHING', `nothing in ${displayLabel(meta)} matches ${patterns.map((p) => shownPath(p)).join(', ')}`);
  return chosen;
}

/** The signals that cancel a restore instead of killing turnback mid-way. */

/** Prints each step's preview, and what its span did that a file restore leaves (git's HEAD, the index). */
export function showPreviews(io: Io, steps: readonly Step[], maxRows: number): void {
  for (const step of steps) {
    io.out(...renderUndoPreview(step.preview, io.style, maxRows));
    for (const note of step.notes ?? []) io.out(io.style.dim(`note: ${shownText(note)}`));
    if (step.aside !== undefined) showAside(io, step.aside, maxRows);
  }
}

/** What an agent turn's undo leaves to other agents' sessions, and what it refuses. */
function showAside(io: Io, aside: NonNullable<Step['aside']>, maxRows: number): void {
  const { left, refused } = aside;
  if (left.length > 0) {
    io.out(`left as they are: ${left.length} ${left.length === 1 ? 'file' : 'files'} another agent changed meanwhile`);
    for (const row of left.slice(0, rowsShown(left.length, maxRows))) io.out(`  left        ${shownPath(row.path)}   ${io.style.dim(`changed by ${shownText(row.by)}`)}`);
  }
  if (refused.length > 0) {
    io.out(`refused: ${refused.length} ${refused.length === 1 ? 'file' : 'files'} another agent may have changed too (--force PATH takes ${refused.length === 1 ? 'it' : 'one'} back anyway)`);
    for (const row of refused.slice(0, rowsShown(refused.length, maxRows))) io.out(`  refused     ${shownPath(row.path)}   ${io.style.dim(shownText(row.why))}`);
  }
}

/** Adds to `step` the notes its span's runs recorded beyond files (`only`: the step's own picture). */
export async function withNotes(store: StoreView, step: Step, only = false): Promise<Step> {
  const notes = await callNotesSince(store, step.meta, only);
  return notes.length > 0 ? { ...step, notes } : step;
}

/**
 * `turnback undo [ID] [--path P]… [--yes] [--dry-run] [--delete-created]`: preview, ask, restore.
 * Deletes only what the picture itself created and nobody changed since, unless
 * `--delete-created`; modes are never widened; saves first.
 */
export async function undoCommand(id: string | undefined, options: UndoOptions, io: Io): Promise<number> {
  const { context, store, observer } = await openForRestore(options, io);
  // What the undone picture itself created, still as it left it, goes (saved first); files others
  // created since stay, unless --delete-created.
  const created = options.deleteCreated === true ? 'delete' : 'own';
  const maxFileMib = context.config.resolved.maxFileMib;
  let lines: LineReader | undefined;
  const reader = (): LineReader => (lines ??= new LineReader(personOf(io).input));
  try {
    // An undone picture cannot be restored until the undo is redone: it is not offered. An agent's
    // turn is one entry (its boundary), in place of its tool calls.
    // A turn an agent left open is recorded first, so undo reads the pictures list shows.
    for (const { sessionId, ended } of await endOpenAgentCalls(context, store)) {
      const agent = parseAgentSessionId(sessionId);
      io.err(`turnback: ${shownText(agent?.agent ?? '')} ${shownText(agent?.session ?? sessionId)}: recorded the ${ended === 1 ? 'call' : `${ended} calls`} its hooks left open, so its turn can be undone`);
    }
    const all = await undoablePictures(store);
    const targets = turnsAsTargets(all, await agentTurns(store, all));
    const pictures = targets.filter((m) => m.entryCount > 0 && m.state !== 'undone');
    const paths = (options.path ?? []).map((p) => projectPathOf(context.projectRoot, p, context.invocation.cwd));
    const forced = options.force === undefined ? undefined : options.force.map((p) => projectPathOf(context.projectRoot, p, context.invocation.cwd));
    const steps: Step[] = [];

    if (id !== undefined) {
      const meta = await resolveId(store, id);
      // A folder or a glob stands for the picture's paths it matches.
      const chosen = paths.length > 0 ? await matchingInPlan(observer, meta, created, paths) : undefined;
      steps.push(chosen === undefined ? await undoStep(io, store, observer, meta, created, maxFileMib, forced, context.maxRows) : await planStep(observer, meta, created, chosen, maxFileMib, undefined, forced));
    } else if (paths.length > 0) {
      // Each path goes back to its state before its own latest change; a folder or a glob
      // stands for every changed path it matches.
      const byCheckpoint = new Map<string, { meta: CheckpointMeta; paths: string[] }>();
      const matches = pathMatcher(paths);
      const changed = new Set<string>();
      for (const meta of pictures) for (const entry of (await store.manifest(meta.id as CheckpointId)).entries) if (matches(entry.path)) changed.add(entry.path);
      if (changed.size === 0) throw new CliExit(EXIT.nothing, 'NOTHING', `no checkpoint holds a change of ${paths.map((p) => shownPath(p)).join(', ')}`);
      for (const p of [...changed].sort()) {
        const meta = await latestCheckpointFor(store, p);
        if (meta === undefined) throw new CliExit(EXIT.nothing, 'NOTHING', `no checkpoint holds a change of ${shownPath(p)}`);
        const group = byCheckpoint.get(meta.id) ?? { meta, paths: [] };
        group.paths.push(p);
        byCheckpoint.set(meta.id, group);
      }
      for (const group of byCheckpoint.values()) steps.push(await planStep(observer, group.meta, created, group.paths, maxFileMib, undefined, forced));
    } else {
      if (pictures.length === 0) throw new CliExit(EXIT.nothing, 'NOTHING', 'no checkpoints in this project');
      let chosen: CheckpointMeta | undefined;
      if (options.yes === true || options.dryRun === true || io.json) {
        // The last turn changed nothing: say so, never quietly take back the one before it.
        const empty = emptyLastPicture(targets);
        if (empty !== undefined) {
          const before = bareUndoTarget(pictures);
          throw new CliExit(EXIT.nothing, 'NOTHING', `nothing to undo: the last picture (${displayLabel(empty)} · ${displayTime(empty.shownAt)}) changed no file${before !== undefined ? `; turnback undo ${shortId(before.id)} takes back the one before it (${displayLabel(before)})` : ''}`);
        }
        // Like an editor's undo: the newest picture still in effect, never a save an undo made.
        chosen = bareUndoTarget(pictures);
        if (chosen === undefined) throw new CliExit(EXIT.nothing, 'NOTHING', 'nothing to undo: every picture here was already undone (turnback redo brings the last one back)');
      } else if (io.invocation.stdin?.isTTY === true && io.invocation.terminal?.isTTY === true) {
        const picker = new TerminalPicker(io.invocation.stdin, io.invocation.terminal);
        const index = await picker.pick('undo to which picture? (↑/↓ move · Enter previews · Esc cancels)', pictures.map(pictureLine), '');
        chosen = index === undefined ? undefined : pictures[index];
        if (chosen !== undefined) {
          const step = await withNotes(store, await undoStep(io, store, observer, chosen, created, maxFileMib, forced, context.maxRows));
          if (!step.preview.writes) return nothingToChange(io, [step], context.maxRows);
          const notes = (step.notes ?? []).map((note) => io.style.dim(`note: ${shownText(note)}`));
          const ok = await picker.confirm([...renderUndoPreview(step.preview, io.style, context.maxRows), ...notes], 'Enter restores · Esc cancels');
          if (!ok) return cancelled(io);
          return await applySteps(io, context, observer, [step], created);
        }
      } else {
        io.out(...pictures.map((m, i) => `${String(i + 1).padStart(3)}  ${pictureLine(m)}`));
        const index = parsePick(await reader().ask(personOf(io).output, 'number to preview (anything else cancels): '), pictures.length);
        chosen = index === undefined ? undefined : pictures[index];
      }
      if (chosen === undefined) return cancelled(io);
      steps.push(await undoStep(io, store, observer, chosen, created, maxFileMib, forced, context.maxRows));
    }

    if (!steps.some((s) => s.preview.writes)) return nothingToChange(io, steps, context.maxRows);
    const noted = await Promise.all(steps.map((s) => withNotes(store, s)));
    showPreviews(io, noted, context.maxRows);
    if (options.dryRun === true) {
      io.emit({ dryRun: true, previews: noted.map((s) => ({ checkpoint: s.meta.id, ...s.preview, entries: s.plan.entries, notes: s.notes ?? [] })) });
      await observer.close();
      return EXIT.ok;
    }
    if (!(await confirm(io, options, reader))) return cancelled(io);
    return await applySteps(io, context, observer, steps, created);
  } finally {
    lines?.close();
    await observer.close().catch(() => undefined);
  }
}

/** Says the restore was cancelled (exit 3). */
export function cancelled(io: Io): number {
  io.out('undo cancelled');
  io.emit({ restored: false, reason: 'cancelled' });
  return EXIT.nothing;
}

/** Shows the previews and says nothing needs writing (exit 3). */
export function nothingToChange(io: Io, steps: readonly Step[], maxRows: number): number {
  showPreviews(io, steps, maxRows);
  io.out('nothing to undo: every file is already as it was, or was changed since');
  io.emit({ restored: false, reason: 'nothing-to-change', previews: steps.map((s) => ({ checkpoint: s.meta.id, ...s.preview, entries: s.plan.entries })) });
  return EXIT.nothing;
}

/**
 * `turnback redo`: puts the tree back as it was before the last undo, by restoring that undo's
 * saved checkpoint with `created: 'delete'` (guarded like every restore, and itself undoable).
 */
export async function redoCommand(options: GlobalOptions & { yes?: boolean; dryRun?: boolean }, io: Io): Promise<number> {
  const { context, store, observer } = await openForRestore(options, io);
  let lines: LineReader | undefined;
  try {
    const metas = await store.list();
    // Redo walks forward through the undos not yet redone, newest first; a change made since the
    // last undo ends that walk, as in an editor.
    // A cancelled undo (rolled back) changed nothing: there is nothing of it to redo.
    const cancelledSaves = new Set((await undoablePictures(store)).filter((p) => p.state === 'cancelled').map((p) => p.id));
    const stack = redoStack(metas.filter((m) => !cancelledSaves.has(m.id)));
    const last = stack.saves.at(-1);
    if (last === undefined) {
      const why = stack.clearedBy !== undefined
        ? `files changed since the last undo (${displayLabel(stack.clearedBy)}); that undo's save is still in turnback list`
        : metas.some((m) => m.kind === 'pre-restore') ? 'every undo was already redone' : 'no undo in this project';
      throw new CliExit(EXIT.nothing, 'NOTHING', `nothing to redo: ${why}`);
    }
    const step = await planStep(observer, last, 'delete', undefined, context.config.resolved.maxFileMib, 'redo (back to before the last undo)');
    if (!step.preview.writes) return nothingToChange(io, [step], context.maxRows);
    showPreviews(io, [step], context.maxRows);
    if (options.dryRun === true) {
      io.emit({ dryRun: true, previews: [{ checkpoint: step.meta.id, ...step.preview, entries: step.plan.entries }] });
      return EXIT.ok;
    }
    if (!(await confirm(io, options, () => (lines ??= new LineReader(personOf(io).input))))) return cancelled(io);
    return await applySteps(io, context, observer, [step], 'delete', 'redo');
  } finally {
    lines?.close();
    await observer.close().catch(() => undefined);
  }
}
