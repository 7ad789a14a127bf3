import type { CheckpointId } from '../index.js';
import { shownPath, shownText } from '../report/escape.js';
import { rowsShown } from '../report/folding.js';
import type { GlobalOptions } from './context.js';
import { LineReader } from './dialogue.js';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';
import { checkpointOfCall, displayLabel, resolveId, shortId, undoablePictures } from './pictures.js';
import { changesHolder } from './agent-turns.js';
import { isCheckpointError } from '../index.js';
import { callWords, sharedChanges } from '../hooks.js';
import { projectPathOf } from './undo.js';
import { openExisting } from './info.js';
import { applySteps, cancelled, confirm, nothingToChange, openForRestore, personOf, planStep, showPreviews, withNotes } from './undo.js';

/** Options of `turnback revert`. */
export interface RevertOptions extends GlobalOptions {
  yes?: boolean;
  dryRun?: boolean;
  deleteCreated?: boolean;
  /** Paths to write back though they would be refused (changed while another call ran too; a write cut short). */
  force?: string[];
}

/**
 * `turnback revert ID`: undoes only what that picture's turn changed and keeps every later turn.
 * A path a later turn (still in effect) changed again is listed and left; the rest is restored
 * to before the turn, guarded and saved first like every undo, so the revert is itself undoable
 * (and `redo` walks it forward again).
 */
export async function revertCommand(id: string, options: RevertOptions, io: Io): Promise<number> {
  const { context, store, observer } = await openForRestore(options, io);
  let lines: LineReader | undefined;
  try {
    // An agent turn's boundary stands for the turn: its whole-turn picture holds the changes.
    const meta = await changesHolder(store, await resolveId(store, id));
    if (meta.kind !== 'turn' && meta.kind !== 'call') {
      throw new CliExit(EXIT.usage, 'USAGE', `revert takes a picture a run took; ${displayLabel(meta)} is ${meta.kind === 'pre-restore' ? "a restore's save (turnback redo, or turnback undo ID, brings it back)" : `a ${meta.kind}`}`);
    }
    const manifest = await store.manifest(meta.id as CheckpointId);
    const ownEntries = manifest.entries;
    const own = [...new Set(ownEntries.map((e) => e.path))].sort();
    const ownAfter = new Map(ownEntries.map((e) => [e.path, e.after]));
    if (own.length === 0) {
      // A picture cut short (its budget ran out) found no change where it did not look: not "no change".
      const cut = manifest.gaps.find((gap) => gap.path === undefined);
      const unknown = cut !== undefined ? `, but its pictures were incomplete (${shownText(cut.detail)}): what it changed there is not known` : manifest.complete ? '' : ', but its pictures were incomplete: what it changed there is not known';
      throw new CliExit(EXIT.nothing, 'NOTHING', `nothing to revert: ${displayLabel(meta)} ${unknown === '' ? 'changed no file' : `recorded no change${unknown}`}`);
    }
    // The first later turn, still in effect, that changed each of the turn's paths again.
    const changedLater = new Map<string, string>();
    const wanted = new Set(own);
    const later = (await undoablePictures(store)).filter((m) => m.id > meta.id && (m.kind === 'turn' || m.kind === 'call') && m.state !== 'undone' && m.entryCount > 0).reverse();
    for (const next of later) {
      for (const entry of (await store.manifest(next.id as CheckpointId)).entries) {
        // A later picture whose window held this one's change (an agent turn's whole-tree
        // picture, another session's) ends the path exactly where this one left it: no change again.
        const sameEnd = entry.after !== undefined && entry.after === ownAfter.get(entry.path);
        if (!sameEnd && wanted.delete(entry.path)) changedLater.set(entry.path, `${shortId(next.id)} ${displayLabel(next)}`);
      }
    }
    // A change another call open at the same time could have made is not this picture's alone:
    // refused, with the reason, unless named with --force.
    const forced = (options.force ?? []).map((p) => projectPathOf(context.projectRoot, p, context.invocation.cwd));
    const refusedRows: { path: string; with: string }[] = [];
    if (manifest.sessionId !== undefined) {
      for (const call of manifest.calls) {
        for (const change of await sharedChanges(store, manifest.sessionId, call.callId)) {
          if (!wanted.has(change.path) || forced.includes(change.path) || refusedRows.some((r) => r.path === change.path)) continue;
          refusedRows.push({ path: change.path, with: change.with.map(callWords).join(', ') });
        }
      }
    }
    const refusedPaths = new Set(refusedRows.map((r) => r.path));
    const free = own.filter((p) => !changedLater.has(p) && !refusedPaths.has(p));
    // What this checkpoint's own call created, still as it left it, goes with its undo (saved first);
    // what others created stays unless --delete-created (issue #26, point 7).
    const created = options.deleteCreated === true ? 'delete' : 'own';
    const leftRows = [...changedLater].map(([p, by]) => ({ path: p, by }));
    io.emit({ revert: meta.id, changedLater: leftRows, refused: refusedRows });
    const printAside = (): void => {
      printLeft(io, leftRows, context.maxRows);
      printRefused(io, refusedRows, context.maxRows);
    };
    if (free.length === 0) {
      printAside();
      const why = refusedRows.length > 0 ? 'was changed again by a later picture, or while another call ran too' : 'was changed again by a later picture';
      throw new CliExit(EXIT.nothing, 'NOTHING', `nothing to revert: every file ${displayLabel(meta)} changed ${why}`);
    }
    const planForce = forced.filter((p) => free.includes(p));
    const step = await withNotes(store, await planStep(observer, meta, created, free, context.config.resolved.maxFileMib, `revert ${displayLabel(meta)} (its own changes; later turns kept)`, planForce.length > 0 ? planForce : undefined), true);
    if (!step.preview.writes) {
      printAside();
      return nothingToChange(io, [step], context.maxRows);
    }
    showPreviews(io, [step], context.maxRows);
    printAside();
    if (options.dryRun === true) {
      io.emit({ dryRun: true, previews: [{ checkpoint: meta.id, ...step.preview, entries: step.plan.entries }], changedLater: leftRows, refused: refusedRows });
      return EXIT.ok;
    }
    if (!(await confirm(io, options, () => (lines ??= new LineReader(personOf(io).input))))) return cancelled(io);
    return await applySteps(io, context, observer, [step], created, 'revert');
  } finally {
    lines?.close();
    await observer.close().catch(() => undefined);
  }
}

/**
 * `turnback undo --call TOOL_CALL_ID`: undoes one agent tool call — a revert of the checkpoint
 * that recorded it (later calls and turns kept). Takes the agent's tool-call id or the call's
 * picture id as `list` shows it.
 *
 * @throws CliExit (usage, exit 2) when no checkpoint here recorded that call.
 */
export async function revertCallCommand(callId: string, options: RevertOptions, io: Io): Promise<number> {
  const { store } = await openExisting(options, io);
  // The agent's tool-call id, or any id a list, show or --json output printed for the call (or its turn).
  let meta = await checkpointOfCall(store, callId);
  if (meta === undefined) {
    try {
      meta = await resolveId(store, callId);
    } catch (error) {
      if (isCheckpointError(error, 'INVALID_ID') || (error instanceof CliExit && error.reason === 'UNKNOWN_CHECKPOINT')) throw new CliExit(EXIT.usage, 'UNKNOWN_CALL', `no picture in this project recorded tool call ${shownText(callId)}`);
      throw error;
    }
  }
  return revertCommand(meta.id, options, io);
}

/** The paths a revert refuses because another call open at the time could have changed them, with those calls. */
function printRefused(io: Io, rows: readonly { path: string; with: string }[], maxRows: number): void {
  if (rows.length === 0) return;
  io.out(`refused: ${rows.length} ${rows.length === 1 ? 'file' : 'files'} changed while another call ran too (--force PATH takes ${rows.length === 1 ? 'it' : 'one'} back anyway)`);
  const shown = rowsShown(rows.length, maxRows);
  for (const row of rows.slice(0, shown)) io.out(`  refused     ${shownPath(row.path)}   ${io.style.dim(`changed while ${shownText(row.with)} ran too`)}`);
  if (rows.length > shown) io.out(io.style.dim(`  … and ${rows.length - shown} more refused (--all lists every one)`));
}

/** The paths a revert leaves because a later picture changed them again, with that picture. */
function printLeft(io: Io, rows: readonly { path: string; by: string }[], maxRows: number): void {
  if (rows.length === 0) return;
  io.out(`left as they are: ${rows.length} ${rows.length === 1 ? 'file' : 'files'} a later picture changed again`);
  const shown = rowsShown(rows.length, maxRows);
  for (const row of rows.slice(0, shown)) io.out(`  left        ${shownPath(row.path)}   ${io.style.dim(`changed again by ${row.by}`)}`);
  if (rows.length > shown) io.out(io.style.dim(`  … and ${rows.length - shown} more left (--all lists every one)`));
}
