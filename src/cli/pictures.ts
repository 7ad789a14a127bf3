import { discardedCheckpoints, goneMessage, isPidAlive } from '../admin.js';
import { parseAgentSessionId } from '../hooks.js';
import { shownText } from '../report/escape.js';
import { processesOfRun } from './command-process.js';
import { EXIT } from './exit-codes.js';
import { CliExit } from './io.js';
import { CheckpointError, type CheckpointId, type CheckpointManifest, type CheckpointMeta, type StoreView } from '../index.js';

/** Checkpoint kinds the user can undo to: runs, restores' saves, and calls attributed after a restart. */
const UNDOABLE = new Set<CheckpointMeta['kind']>(['turn', 'pre-restore', 'call']);

/** The longest label the command gives a picture: one line, cut with `…`. */
export const LABEL_MAX_CHARS = 60;

/** `text` on one line (control characters and runs of white space as one space), cut to {@link LABEL_MAX_CHARS}. */
export function shortLabel(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f\s]+/g, ' ').trim();
  return line.length <= LABEL_MAX_CHARS ? line : `${line.slice(0, LABEL_MAX_CHARS - 1).trimEnd()}…`;
}

/** A label without its leading `before ` (`before undo of sed -i …`, not `before undo of before sed …`). */
export function withoutBefore(label: string): string {
  return label.startsWith('before ') ? label.slice('before '.length) : label;
}

/**
 * What a person calls a checkpoint: `before ./tidy.sh`, or, for a restore's save, its own label
 * (`before undo of ./tidy.sh`, `before redo`) or `before undo` when it has none.
 */
export function displayLabel(meta: Pick<CheckpointMeta, 'kind' | 'label'>): string {
  if (meta.kind === 'pre-restore') return meta.label !== undefined && meta.label.length > 0 ? shownText(meta.label) : 'before undo';
  // A call checkpoint is an interrupted run recorded later; its label is the bare command.
  if (meta.kind === 'call' && meta.label !== undefined && meta.label.length > 0) return `before ${shownText(meta.label)}`;
  if (meta.label !== undefined && meta.label.length > 0) return shownText(meta.label);
  return `before ${meta.kind}`;
}

/** `14:02` today, `2024-05-01 14:02` on other days, in local time. */
export function displayTime(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const pad = (n: number): string => String(n).padStart(2, '0');
  const hm = `${pad(at.getHours())}:${pad(at.getMinutes())}`;
  const sameDay = at.getFullYear() === now.getFullYear() && at.getMonth() === now.getMonth() && at.getDate() === now.getDate();
  return sameDay ? hm : `${at.getFullYear()}-${pad(at.getMonth() + 1)}-${pad(at.getDate())} ${hm}`;
}

/** The short id shown in lists: the random tail of the id, which `resolveId` accepts. */
export function shortId(id: string): string {
  return id.slice(-8);
}

/**
 * How a picture's row reads:
 * - `complete`: sealed;
 * - `partial`: a finished run whose pictures could not cover everything (a budget, an unreadable folder);
 * - `running`: a `turnback run` still in progress (its process is alive);
 * - `interrupted`: the changes of a run whose turnback was killed, recorded afterwards;
 * - `cut-short`: a run's checkpoint whose turnback died before sealing it;
 * - `open`: open, written by another kind of session (a library observer);
 * - `undone`: a later undo took its changes back; `turnback redo` brings them back;
 * - `cancelled`: an undo, redo or revert cancelled (Ctrl-C) or killed, and rolled back: it changed nothing.
 */
export type PictureState = 'complete' | 'partial' | 'running' | 'interrupted' | 'cut-short' | 'open' | 'undone' | 'cancelled';

/** An undoable checkpoint as lists show it. */
export interface Picture extends CheckpointMeta {
  /** The time to show: when its state existed (an interrupted run's start, not when it was recorded). */
  shownAt: string;
  state: PictureState;
}

/** The pid inside a CLI session id (`cli-<pid>-<time>`), or undefined for other sessions. */
function cliPid(sessionId: string | undefined): number | undefined {
  const match = /^cli-(\d+)-/.exec(sessionId ?? '');
  return match === null ? undefined : Number(match[1]);
}

function stateOf(meta: CheckpointMeta): PictureState {
  // An agent hook's call is ended by the agent's next event, by design in another process.
  if (meta.kind === 'call') return parseAgentSessionId(meta.sessionId) !== undefined ? (meta.complete ? 'complete' : 'partial') : 'interrupted';
  if (meta.complete) return 'complete';
  const pid = cliPid(meta.sessionId);
  if (pid === undefined) return 'open';
  return isPidAlive(pid) ? 'running' : 'cut-short';
}

/**
 * Undoable checkpoints, newest first. The empty turn a killed `turnback run` leaves behind is not
 * listed: it recorded nothing, and the run's changes are the `interrupted` row (once a command
 * has recorded it) or the interrupted-run notice (until then). Its id still works with `show`.
 */
export async function undoablePictures(store: StoreView): Promise<Picture[]> {
  const metas = (await store.list()).filter((m) => UNDOABLE.has(m.kind)).sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  // A picture a full undo went back to is undone too (its changes were taken back); a save's own
  // range boundary is not (a redo's range starts at the save it restored).
  const undone = new Map([
    ...(await discardedCheckpoints(store, metas.filter((m) => m.kind !== 'pre-restore').map((m) => m.id), { boundaries: true })),
    ...(await discardedCheckpoints(store, metas.filter((m) => m.kind === 'pre-restore').map((m) => m.id))),
  ]);
  const pictures: Picture[] = [];
  for (const meta of metas) {
    let state = undone.has(meta.id) ? 'undone' : stateOf(meta);
    if (state === 'cut-short' && meta.kind === 'turn') {
      // Not complete can also mean a finished run whose picture was partial (its run call ended);
      // else its turnback is gone, yet the command (or a child it left) may still be writing.
      const manifest = await store.manifest(meta.id).catch(() => undefined);
      const ended = manifest?.calls.some((c) => c.callId === 'run' && c.endedAt !== undefined) === true;
      if (ended && (manifest?.gaps.length ?? 0) > 0) state = 'partial';
      else if ((processesOfRun(meta.sessionId as string)?.length ?? 0) > 0) state = 'running';
    }
    if (state === 'cut-short' && meta.kind === 'turn' && meta.entryCount === 0) continue;
    if (meta.kind === 'pre-restore' && !meta.complete && state !== 'running' && changedNothing(await store.manifest(meta.id).catch(() => undefined))) state = 'cancelled';
    let shownAt = meta.createdAt;
    if (meta.kind === 'call') {
      const started = (await store.manifest(meta.id).catch(() => undefined))?.calls[0]?.startedAt;
      if (started !== undefined) shownAt = started;
    }
    pictures.push({ ...meta, shownAt, state });
  }
  return pictures;
}

/**
 * True for a save whose every path's closing record is the state it saved: its restore was rolled
 * back (cancelled, or killed and rolled back by the next command) and changed nothing.
 */
function changedNothing(manifest: CheckpointManifest | undefined): boolean {
  if (manifest === undefined || manifest.entries.length === 0) return false;
  return manifest.entries.every(({ before, after }) => {
    if (after === undefined) return false;
    if (before.type === 'file') return after === `file:${before.hash}`;
    if (before.type === 'symlink') return after === `symlink:${before.target}`;
    return before.type === 'absent' && after === 'absent';
  });
}

/** The words a list adds after a row's file count, or `''` for a complete picture. */
export function stateText(state: PictureState): string {
  switch (state) {
    case 'complete':
      return '';
    case 'partial':
      return 'partial: some files had no copy or were not checked (turnback show lists why)';
    case 'running':
      return 'running now';
    case 'interrupted':
      return 'interrupted: turnback was killed while it ran';
    case 'cut-short':
      return 'cut short: turnback was killed before it finished';
    case 'open':
      return 'open or cut short';
    case 'undone':
      return 'undone: `turnback redo` brings it back';
    case 'cancelled':
      return 'cancelled, nothing changed';
  }
}

/**
 * Finds a checkpoint by its full id or its short id (the 8-character tail shown by `list`).
 *
 * @throws CheckpointError `UNKNOWN_CHECKPOINT` when none matches (cleared or never taken),
 *   `INVALID_ID` when the text is neither form or a short id is ambiguous.
 */
export async function resolveId(store: StoreView, given: string): Promise<CheckpointMeta> {
  const text = given.trim().toLowerCase();
  const metas = await store.list();
  const exact = metas.find((m) => m.id === text);
  if (exact !== undefined) return exact;
  // A short id is 8 hex digits; a full id starts with 13 digits of milliseconds.
  if (!/^[0-9a-f]{4,8}$|^[0-9]{4,13}(-[0-9a-z]{0,4}(-[0-9a-f]{0,8})?)?$/.test(text)) {
    // An agent's tool-call id (`toolu_…`, `call_…`, a paired call's key), as show and --json print it.
    const ofCall = await checkpointOfCall(store, given.trim(), metas);
    if (ofCall !== undefined) return ofCall;
    throw new CheckpointError('INVALID_ID', `not a checkpoint id: ${shownText(given.slice(0, 80))} (a full id, or 4 or more of its first or last characters, as turnback list shows, or an agent's tool-call id)`);
  }
  // Any unique prefix of 4 or more characters, of the full id or of the short id `list` shows.
  const matches = metas.filter((m) => m.id.startsWith(text) || shortId(m.id).startsWith(text));
  if (matches.length === 1) return matches[0] as CheckpointMeta;
  if (matches.length > 1) {
    throw new CheckpointError('INVALID_ID', `${text} matches ${matches.length} pictures (${matches.slice(0, 5).map((m) => shortId(m.id)).join(', ')}${matches.length > 5 ? ', …' : ''}); give more of the id`);
  }
  const ofCall = await checkpointOfCall(store, given.trim(), metas);
  if (ofCall !== undefined) return ofCall;
  const removal = await store.removal(text);
  if (removal === undefined) throw new CliExit(EXIT.usage, 'UNKNOWN_CHECKPOINT', `no picture ${text} in this project (turnback list shows them)`);
  // Pruned by retain, cleared by keep_days or the store cap, dropped: the store's words say which.
  throw new CheckpointError('UNKNOWN_CHECKPOINT', goneMessage(text, removal));
}

/**
 * The checkpoint that recorded tool call `callId` (its own call checkpoint, or a turn that holds
 * it), newest first; the exact id, else the one id that matches ignoring case.
 */
export async function checkpointOfCall(store: StoreView, callId: string, metas?: readonly CheckpointMeta[]): Promise<CheckpointMeta | undefined> {
  const candidates = (metas ?? (await store.list())).filter((m) => (m.kind === 'call' || m.kind === 'turn') && m.sessionId !== undefined).sort((a, b) => (a.id < b.id ? 1 : -1));
  const folded: CheckpointMeta[] = [];
  for (const meta of candidates) {
    const manifest = await store.manifest(meta.id).catch(() => undefined);
    for (const call of manifest?.calls ?? []) {
      if (call.callId === callId) return meta;
      if (call.callId.toLowerCase() === callId.toLowerCase() && !folded.includes(meta)) folded.push(meta);
    }
  }
  return folded.length === 1 ? folded[0] : undefined;
}

/** The undo target for one path: the newest undoable checkpoint with an entry for it. */
export async function latestCheckpointFor(store: StoreView, projectPath: string): Promise<Picture | undefined> {
  for (const meta of await undoablePictures(store)) {
    if (meta.state === 'undone') continue;
    const manifest = await store.manifest(meta.id as CheckpointId);
    if (manifest.entries.some((e) => e.path === projectPath)) return meta;
  }
  return undefined;
}

/**
 * What the runs of `from` — and, unless `only`, of every later run picture — recorded beyond files
 * (git's HEAD moved, files staged), oldest first: an undo preview says what a file restore leaves.
 */
export async function callNotesSince(store: StoreView, from: Pick<CheckpointMeta, 'id'>, only = false): Promise<string[]> {
  const runs = (await store.list()).filter((m) => (m.kind === 'turn' || m.kind === 'call') && (only ? m.id === from.id : m.id >= from.id)).sort((a, b) => (a.id < b.id ? -1 : 1));
  const notes: string[] = [];
  for (const meta of runs) {
    const manifest = await store.manifest(meta.id as CheckpointId).catch(() => undefined);
    for (const call of manifest?.calls ?? []) notes.push(...(call.notes ?? []));
  }
  return notes;
}
