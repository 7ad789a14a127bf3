import * as path from 'node:path';
import { FolderAnchors } from '../fs/anchors.js';
import type { FileSystem } from '../fs/file-system.js';

// After a restore that deleted files created since its checkpoint: the folders those deletes
// emptied, which were themselves made since the checkpoint, go too, so an undo leaves no empty
// folder behind. A folder is removed only when it is empty, reached from the root through real
// folders (held by descriptor, never a link), and born after the checkpoint by its own birth time;
// where the file system keeps no birth time, it stays (an empty folder that existed before the
// checkpoint is never removed on a guess).

/**
 * Removes, deepest first, the folders above `deleted` (project paths the restore deleted) that
 * are now empty and were born after `sinceMs` — or that `madeAfter` names (known newer than the
 * checkpoint by sequence: the folders the restore that made a save created). Returns the project
 * paths removed; a folder that cannot be judged or removed is left as it is.
 */
export async function removeEmptiedFolders(fs: FileSystem, projectRoot: string, deleted: readonly string[], sinceMs: number, madeAfter: ReadonlySet<string> = new Set()): Promise<string[]> {
  const candidates = new Set<string>();
  for (const projectPath of deleted) {
    for (let slash = projectPath.lastIndexOf('/'); slash > 0; slash = projectPath.lastIndexOf('/', slash - 1)) candidates.add(projectPath.slice(0, slash));
  }
  const deepestFirst = [...candidates].sort((a, b) => b.split('/').length - a.split('/').length || (a < b ? -1 : 1));
  const anchors = new FolderAnchors(fs, projectRoot);
  const removed: string[] = [];
  try {
    for (const folder of deepestFirst) {
      const abs = path.join(projectRoot, ...folder.split('/'));
      try {
        await anchors.hold(path.dirname(abs));
        const through = await anchors.at(abs);
        const stats = await fs.lstat(through);
        // Only a real folder made after the checkpoint (a birth time of 0 means none is kept).
        if (!stats.isDirectory() || !(madeAfter.has(folder) || stats.birthtimeMs > sinceMs)) continue;
        if ((await fs.readdir(through)).length > 0) continue;
        await fs.rmdir(through);
        removed.push(folder);
      } catch {
        // Gone, not empty after all, or not reachable without a link: left as it is.
      }
    }
  } finally {
    await anchors.release();
  }
  return removed;
}
