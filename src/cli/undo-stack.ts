import type { CheckpointMeta } from '../index.js';

// Undo and redo as a stack, like an editor's, read from the checkpoints themselves (pure): an
// undo's save is a `pre-restore` whose `restoreOf` is a picture; a redo's save is one whose
// `restoreOf` is another save. Nothing is kept beside the store, so every process sees one stack.

/** What the stack needs of a checkpoint. */
export type StackMeta = Pick<CheckpointMeta, 'id' | 'kind' | 'entryCount' | 'restoreOf'>;

/** The saves a `redo` can bring back, newest last, and why the stack was emptied when it was. */
export interface RedoStack<M extends StackMeta> {
  /** Undo saves not yet redone, oldest first: `redo` restores the last one. */
  saves: M[];
  /** The picture taken after the last undo that emptied the stack (files changed since), if any. */
  clearedBy?: M;
}

/**
 * Walks the checkpoints in order: an undo pushes its save, a redo removes the save it restored
 * (and any pushed after it), and a new change (a turn or call that changed files) empties the
 * stack — a redo past it would also take that change away, which no editor does.
 */
export function redoStack<M extends StackMeta>(metas: readonly M[]): RedoStack<M> {
  const inOrder = [...metas].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const saveIds = new Set(inOrder.filter((m) => m.kind === 'pre-restore').map((m) => m.id));
  let saves: M[] = [];
  let clearedBy: M | undefined;
  for (const meta of inOrder) {
    if (meta.kind === 'pre-restore') {
      if (meta.restoreOf !== undefined && saveIds.has(meta.restoreOf)) {
        const at = saves.findIndex((s) => s.id === meta.restoreOf);
        if (at >= 0) saves = saves.slice(0, at);
      } else if (meta.entryCount > 0) {
        saves.push(meta);
        clearedBy = undefined;
      }
    } else if ((meta.kind === 'turn' || meta.kind === 'call') && meta.entryCount > 0 && saves.length > 0) {
      saves = [];
      clearedBy = meta;
    }
  }
  return { saves, ...(clearedBy !== undefined ? { clearedBy } : {}) };
}

/** What a picture needs for {@link bareUndoTarget}. */
export type UndoCandidate = StackMeta & { state: string };

/**
 * The picture a bare `undo` goes back to: the newest picture whose changes are still in effect —
 * never a save an undo or redo made, never one a full undo already took back (`undone`), never an
 * empty one. So `undo`, `undo` steps back one picture at a time.
 */
export function bareUndoTarget<M extends UndoCandidate>(newestFirst: readonly M[]): M | undefined {
  return newestFirst.find((m) => m.kind !== 'pre-restore' && m.state !== 'undone' && m.entryCount > 0);
}

/**
 * The newest picture when it changed no file and nothing was undone or redone after it: a bare
 * `undo` then says so instead of quietly taking back the picture before it (the person asked to
 * undo what just happened, and nothing happened). Once an undo came after it, stepping back goes
 * on past it.
 */
export function emptyLastPicture<M extends UndoCandidate>(newestFirst: readonly M[]): M | undefined {
  for (const meta of newestFirst) {
    if (meta.kind === 'pre-restore' || meta.state === 'undone') return undefined;
    // Still running, or cut short: its count is not final, and it is not what "just happened".
    if (meta.state !== 'complete') continue;
    return meta.entryCount === 0 ? meta : undefined;
  }
  return undefined;
}
