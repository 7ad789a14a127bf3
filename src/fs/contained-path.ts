import { lstat, readlink, realpath } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError } from '../core/errors.js';

// Where a file turnback is about to write outside its store (an agent's settings file, which
// `turnback hooks install` edits) really is. Every component from `root` down is looked at: a
// symlink is followed only when what it points at is inside `root`, so a settings file — or a
// folder holding it — linked to a place outside the project (or outside the home folder, for a
// user-level install) is refused before anything is read or written. What is not there yet is
// made later under the last folder that is, which this walk has shown to be inside.

function inside(rootReal: string, candidate: string): boolean {
  const relative = path.relative(rootReal, candidate);
  return relative === '' || (!relative.startsWith(`..${path.sep}`) && relative !== '..' && !path.isAbsolute(relative));
}

/**
 * The real path of `file`, which must lie under `root`: each existing component is checked, and
 * a symlink among them is followed only when it resolves inside `root`. Missing components are
 * appended as they are (nothing to follow there yet).
 *
 * @throws CheckpointError `OUTSIDE_ROOT` naming the link and where it leads when one leads outside
 *   `root` (or nowhere), or when `file` is not under `root` at all.
 */
export async function realPathInside(root: string, file: string): Promise<string> {
  const rootReal = await realpath(root);
  const relative = path.relative(root, file);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) {
    throw new CheckpointError('OUTSIDE_ROOT', `${file} is not inside ${root}`, { path: file });
  }
  const parts = relative.split(path.sep);
  let at = rootReal;
  for (let index = 0; index < parts.length; index++) {
    const named = path.join(root, ...parts.slice(0, index + 1));
    const next = path.join(at, parts[index] as string);
    let stats;
    try {
      stats = await lstat(next);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return path.join(next, ...parts.slice(index + 1));
      throw error;
    }
    if (!stats.isSymbolicLink()) {
      at = next;
      continue;
    }
    let target: string;
    try {
      target = await realpath(next);
    } catch {
      // A link to nothing: whatever would be made through it could be anywhere.
      throw new CheckpointError('OUTSIDE_ROOT', `${named} is a symlink to ${await readlink(next).catch(() => '?')}, which does not exist: turnback does not write through it`, { path: named, found: 'dangling-symlink' });
    }
    if (!inside(rootReal, target)) {
      throw new CheckpointError('OUTSIDE_ROOT', `${named} is a symlink to ${target}, outside ${root}: turnback does not write through it`, { path: named, found: target });
    }
    at = target;
  }
  return at;
}
