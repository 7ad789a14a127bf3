import { errnoCode } from '../core/errors.js';
import type { Gap } from '../core/model.js';
import { resolveInsideRoot } from '../fs/paths.js';
import { capturePath, type PathCaptureContext } from './capture-path.js';
import type { Picture, PictureRecord } from './picture.js';

/**
 * A picture of named paths only — what a write tool says it will change — instead of the whole
 * tree: each path's stat and its state (bytes into the store, a symlink's target, or nothing when
 * absent). Diffed against a picture of the same paths after the call, it attributes exactly what
 * the call did to them, across processes, for the cost of reading those files (a hook process
 * for a `Write` or an `Edit` costs a few milliseconds, not two sweeps).
 *
 * A path that is a folder or another non-file is left out and reported as a gap: a write tool's
 * target is a file or a link.
 *
 * @throws CheckpointError `INVALID_PATH` for a path that walks through a symlinked folder.
 */
export async function takeScopedPicture(context: PathCaptureContext, projectPaths: readonly string[]): Promise<Picture> {
  const records = new Map<string, PictureRecord>();
  const gaps: Gap[] = [];
  let copied = 0;
  let copiedBytes = 0;
  for (const projectPath of projectPaths) {
    if (records.has(projectPath)) continue;
    const { absolute } = await resolveInsideRoot(context.fs, context.projectRoot, projectPath);
    let stats;
    try {
      stats = await context.fs.lstat(absolute);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') continue;
      gaps.push({ path: projectPath, reason: 'unreadable', detail: `cannot inspect: ${code ?? String(error)}` });
      continue;
    }
    if (!stats.isFile() && !stats.isSymbolicLink()) {
      gaps.push({ path: projectPath, reason: 'unreadable', detail: 'not a file or a link: a scoped call covers files and links only' });
      continue;
    }
    const captured = await capturePath(context, projectPath);
    if (captured.gap !== undefined) gaps.push(captured.gap);
    const { state } = captured;
    if (state.type !== 'file' && state.type !== 'symlink' && state.type !== 'uncopied') continue;
    if (state.type === 'file') {
      copied += 1;
      copiedBytes += state.size;
    }
    records.set(projectPath, {
      path: projectPath,
      type: stats.isSymbolicLink() ? 'symlink' : 'file',
      size: Number(stats.size),
      mode: Number(stats.mode) & 0o7777,
      mtimeMs: stats.mtimeMs,
      ino: Number(stats.ino),
      state,
    });
  }
  return { records, partial: gaps.length > 0, gaps, unchecked: [], copied, copiedBytes, copiedPastBudget: 0, summary: gaps.length > 0 ? `${gaps.length} of the named paths not captured` : '' };
}
