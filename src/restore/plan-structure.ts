import { diskFingerprint } from '../fs/disk-state.js';
import { restoredMode } from './modes.js';
import type { PlanEntry, PlanInput, PlanOptions } from './plan.js';

/** True when the plan removes `path`, created since the checkpoint, instead of keeping it. */
export function deletesCreated(options: PlanOptions, path: string): boolean {
  return options.created === 'delete' || options.ownCreated?.has(path) === true;
}

// The plan across paths (pure): a file swapped for a folder, or a folder for a link or a file,
// comes back in one restore. Planned one by one, each path of such a swap looks changed by
// someone else (a folder stands where the session saw the file vanish; a link stands on the way
// to the recorded files), and the restore would leave the whole swap in place.

/** True when the session recorded the path gone (its latest change left it absent) and it has a file or link to put back. */
function toPutBack(input: PlanInput): boolean {
  return input.lastAfter === 'absent' && input.incomplete !== true && input.unreadable === undefined && (input.target.type === 'file' || input.target.type === 'symlink');
}

/** True when what stands at the path now is what the session last recorded there (so it is the session's own change). */
function recordedNow(input: PlanInput): boolean {
  return input.incomplete !== true && input.unreadable === undefined && input.lastAfter !== undefined && input.lastAfter === diskFingerprint(input.disk);
}

function recreateEntry(input: PlanInput, options: PlanOptions, extra: Pick<PlanEntry, 'reason' | 'afterRemovalOf' | 'expectedHash'> & { action: 'recreate' | 'restore' }): PlanEntry {
  const target = input.target;
  return {
    path: input.path,
    target,
    ...extra,
    ...(target.type === 'file' ? { mode: restoredMode(options.modePolicy, target.mode, undefined) } : {}),
  };
}

/**
 * Rewrites the per-path plan where one path's state stands in another's way (pure):
 * - A link, or a file created since, stands where a folder of recorded files was (the path on the
 *   way to them is not a folder): the link is removed in any restore — it holds no data, and it is
 *   saved first — a file only with `created: 'delete'`; then the files under it are recreated
 *   (`afterRemovalOf`). A file that stays makes its recorded files `file-in-the-way`.
 * - A folder stands where a recorded file or link was: when everything the plan knows inside it
 *   is deleted by this restore, the folder is replaced (`folder-in-the-way`; apply removes it,
 *   after its contents and only when empty, in the same transaction); otherwise the path stays
 *   `directory-in-the-way`.
 */
export function planStructure(entries: PlanEntry[], inputs: readonly PlanInput[], options: PlanOptions): PlanEntry[] {
  const planned = new Map(entries.map((entry) => [entry.path, entry]));
  const inputOf = new Map(inputs.map((input) => [input.path, input]));
  for (const input of inputs) {
    if (!toPutBack(input) || input.objectMissing === true || input.disk.type !== 'other' || input.disk.kind !== 'unknown') continue;
    const blocker = blockerOf(input.path, inputOf);
    if (blocker === undefined) continue;
    // A link holds no data; a file goes when this restore removes what was created (the file is
    // the checkpoint's own creation, or `created: 'delete'`), as any created file would.
    if (blocker.disk.type === 'symlink' || deletesCreated(options, blocker.path)) {
      planned.set(blocker.path, { path: blocker.path, action: 'delete', reason: 'in-the-way', target: { type: 'absent' }, expectedHash: diskFingerprint(blocker.disk) });
      planned.set(input.path, recreateEntry(input, options, { action: 'recreate', expectedHash: 'absent', afterRemovalOf: blocker.path }));
    } else {
      planned.set(input.path, { path: input.path, action: 'refuse', reason: 'file-in-the-way', target: input.target, foundHash: diskFingerprint(blocker.disk) });
    }
  }
  const sorted = [...planned.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const input of inputs) {
    if (!toPutBack(input) || input.objectMissing === true || input.disk.type !== 'other' || input.disk.kind !== 'directory') continue;
    const prefix = `${input.path}/`;
    const inside = sorted.filter((entry) => entry.path.startsWith(prefix));
    const emptied = inside.length > 0 && inside.every((entry) => entry.action === 'delete' || (entry.action === 'skip' && entry.target.type === 'absent'));
    planned.set(
      input.path,
      emptied
        ? recreateEntry(input, options, { action: 'restore', reason: 'folder-in-the-way', expectedHash: 'other:directory' })
        : { path: input.path, action: 'refuse', reason: 'directory-in-the-way', target: input.target, foundHash: 'other:directory' },
    );
  }
  return [...planned.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The nearest path above `projectPath` that the plan knows and that stands in the way as a link
 * or a file the session recorded there (created since, or where its folder was), if any.
 */
function blockerOf(projectPath: string, inputOf: ReadonlyMap<string, PlanInput>): PlanInput | undefined {
  for (let slash = projectPath.lastIndexOf('/'); slash > 0; slash = projectPath.lastIndexOf('/', slash - 1)) {
    const above = inputOf.get(projectPath.slice(0, slash));
    if (above === undefined) continue;
    const wasFolderOrNothing = above.target.type === 'absent' || (above.target.type === 'other' && above.target.kind === 'directory');
    if ((above.disk.type === 'symlink' || above.disk.type === 'file') && wasFolderOrNothing && recordedNow(above)) return above;
    return undefined;
  }
  return undefined;
}
