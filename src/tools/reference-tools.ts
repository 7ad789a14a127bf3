import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { constants as fsConstants } from 'node:fs';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { resolveInsideRoot, toProjectPath } from '../fs/paths.js';
import { FolderAnchors } from '../fs/anchors.js';
import { nodeFileSystem } from '../fs/file-system.js';
import type { WriteObserver, WriteOp } from '../session/write-observer.js';

/** What a write tool needs: the project it may write in, the observer (if checkpoints are on), the call. */
export interface ToolContext {
  /** Absolute project root; every path must resolve inside it. */
  projectRoot: string;
  /** The installed observer, or undefined when checkpoints are off. */
  observer?: WriteObserver | undefined;
  /** The tool call making the change, for attribution. */
  callId?: string;
}

/**
 * Wraps a tool's own mutation of `filePath` with the observer: `beforeWrite` first, then `mutate`
 * (given the absolute path), then `afterWrite` even when `mutate` throws, since it may have
 * written part of the file.
 *
 * @throws CheckpointError `INVALID_PATH` / `OUTSIDE_ROOT` before anything is touched.
 * @example
 * await guardedWrite(ctx, 'out.json', (abs) => fs.writeFile(abs, json));
 */
export async function guardedWrite<T>(
  context: ToolContext,
  filePath: string,
  mutate: (absolutePath: string) => Promise<T>,
  kind: WriteOp['kind'] = 'write',
): Promise<T> {
  const projectPath = toProjectPath(context.projectRoot, filePath);
  const { absolute } = await resolveInsideRoot(nodeFileSystem, context.projectRoot, projectPath);
  return observed(context, projectPath, kind, () => mutate(absolute));
}

/** `beforeWrite`, the mutation, then `afterWrite` even when it throws (it may have written part). */
async function observed<T>(context: ToolContext, projectPath: string, kind: WriteOp['kind'], mutate: () => Promise<T>): Promise<T> {
  const op: WriteOp = context.callId === undefined ? { kind } : { kind, callId: context.callId };
  await context.observer?.beforeWrite(projectPath, op);
  try {
    return await mutate();
  } catch (error) {
    // The tool's own failure (EACCES, ENOENT, …), typed, with the cause.
    throw asCheckpointError(error, `cannot ${kind} ${projectPath}`, projectPath);
  } finally {
    await context.observer?.afterWrite(projectPath, op);
  }
}

/**
 * Runs `act` with each path named through its folder's held descriptor (fs/anchors.ts), the
 * folders reached from the root without following a link (created when `create`), and then checks
 * each folder is still where it was: a folder swapped for a link meanwhile never redirects the
 * reference tools' writes through the link, and a write that landed in a folder moved away fails.
 */
async function inHeldFolders<T>(projectRoot: string, projectPaths: string[], create: boolean, act: (...reached: string[]) => Promise<T>): Promise<T> {
  const root = await fs.realpath(projectRoot);
  const anchors = new FolderAnchors(nodeFileSystem, root);
  const absolutes = projectPaths.map((projectPath) => path.join(root, ...projectPath.split('/')));
  try {
    for (const abs of absolutes) await anchors.hold(path.dirname(abs), create ? () => undefined : undefined);
    const result = await act(...(await Promise.all(absolutes.map((abs) => anchors.at(abs)))));
    for (const [i, abs] of absolutes.entries()) {
      if (!(await anchors.confirm(path.dirname(abs)))) {
        const shown = projectPaths[i] as string;
        throw new CheckpointError('INVALID_PATH', `the folder of ${shown} was moved or replaced by a link during the write`, { path: shown });
      }
    }
    return result;
  } finally {
    await anchors.release();
  }
}

/** The largest file `editFile` reads: past it the text would not fit a string anyway. */
const MAX_EDIT_BYTES = 256 * 1024 * 1024;

/** Open flags that never follow a link at the leaf and never wait on a FIFO or a device. */
const NO_FOLLOW_NO_BLOCK = fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK;

function kindOf(stats: { isSymbolicLink(): boolean; isDirectory(): boolean; isFIFO(): boolean; isSocket(): boolean }): string {
  return stats.isSymbolicLink() ? 'a symlink' : stats.isDirectory() ? 'a folder' : stats.isFIFO() ? 'a FIFO' : stats.isSocket() ? 'a socket' : 'a device';
}

/** A typed refusal of a path that is not a regular file (a link, folder, FIFO, socket, device). */
function notARegularFile(shown: string, kind: string): CheckpointError {
  return new CheckpointError('INVALID_PATH', `refusing to write ${kind}: ${shown} is not a regular file`, { path: shown });
}

/** Refuses a leaf that exists and is not a regular file; a missing leaf is fine (it is created). */
async function refuseOddLeaf(absolute: string, shown: string): Promise<void> {
  let stats;
  try {
    stats = await fs.lstat(absolute);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return;
    throw error;
  }
  if (!stats.isFile()) throw notARegularFile(shown, kindOf(stats));
}

/**
 * Writes `content` as the whole of the regular file at `absolute` (created when missing): opened
 * without following a link and without blocking, checked to be a regular file before anything
 * is truncated, so a FIFO or device swapped in is refused, never written or waited on.
 */
async function writeRegular(absolute: string, shown: string, content: string | Uint8Array): Promise<void> {
  let handle;
  try {
    handle = await fs.open(absolute, fsConstants.O_WRONLY | fsConstants.O_CREAT | NO_FOLLOW_NO_BLOCK, 0o666);
  } catch (error) {
    // ELOOP: a symlink; ENXIO: a FIFO with no reader (opened non-blocking).
    const code = errnoCode(error);
    if (code === 'ELOOP') throw notARegularFile(shown, 'a symlink');
    if (code === 'ENXIO') throw notARegularFile(shown, 'a FIFO');
    throw error;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notARegularFile(shown, kindOf(stats));
    await handle.truncate(0);
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
}

/** Reads the regular file at `absolute` as UTF-8, refusing anything else and anything too large. */
async function readRegular(absolute: string, shown: string): Promise<string> {
  let handle;
  try {
    handle = await fs.open(absolute, fsConstants.O_RDONLY | NO_FOLLOW_NO_BLOCK);
  } catch (error) {
    if (errnoCode(error) === 'ELOOP') throw notARegularFile(shown, 'a symlink');
    throw asCheckpointError(error, `cannot read ${shown}`, shown);
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw notARegularFile(shown, kindOf(stats));
    if (stats.size > MAX_EDIT_BYTES) throw new CheckpointError('INVALID_ARGUMENT', `${shown} is too large to edit (${stats.size} bytes; at most ${MAX_EDIT_BYTES})`, { path: shown });
    return await handle.readFile('utf8');
  } finally {
    await handle.close();
  }
}

/**
 * Reference `write_file` tool: creates or replaces a file (creating parent folders), never writing
 * through a symlink. Keeps the mode of an existing file.
 */
export async function writeFile(context: ToolContext, filePath: string, content: string | Uint8Array): Promise<void> {
  const projectPath = toProjectPath(context.projectRoot, filePath);
  const { absolute } = await resolveInsideRoot(nodeFileSystem, context.projectRoot, projectPath);
  // Refused before the observer is asked, so a bad target changes nothing.
  await refuseOddLeaf(absolute, projectPath);
  await observed(context, projectPath, 'write', () =>
    inHeldFolders(context.projectRoot, [projectPath], true, async (reached) => {
      await refuseOddLeaf(reached, projectPath);
      await writeRegular(reached, projectPath, content);
    }),
  );
}

/**
 * Reference `edit_file` tool: replaces the one exact occurrence of `oldText` with `newText`.
 *
 * @throws CheckpointError `INVALID_ARGUMENT` when `oldText` is empty, missing, or not unique
 *   (nothing is written), unless `replaceAll` is set.
 */
export async function editFile(
  context: ToolContext,
  filePath: string,
  oldText: string,
  newText: string,
  options: { replaceAll?: boolean } = {},
): Promise<{ replacements: number }> {
  if (typeof oldText !== 'string' || oldText.length === 0 || typeof newText !== 'string') {
    throw new CheckpointError('INVALID_ARGUMENT', 'edit needs a non-empty old text and a new text');
  }
  const projectPath = toProjectPath(context.projectRoot, filePath);
  await resolveInsideRoot(nodeFileSystem, context.projectRoot, projectPath);
  const before = await inHeldFolders(context.projectRoot, [projectPath], false, (reached) => readRegular(reached, projectPath));
  const count = before.split(oldText).length - 1;
  if (count === 0) throw new CheckpointError('INVALID_ARGUMENT', `text to replace not found in ${projectPath}`, { path: projectPath });
  if (count > 1 && options.replaceAll !== true) {
    throw new CheckpointError('INVALID_ARGUMENT', `text to replace occurs ${count} times in ${projectPath}; pass replaceAll or more context`, { path: projectPath });
  }
  const after = options.replaceAll === true ? before.split(oldText).join(newText) : before.replace(oldText, () => newText);
  await observed(context, projectPath, 'edit', () => inHeldFolders(context.projectRoot, [projectPath], false, (reached) => writeRegular(reached, projectPath, after)));
  return { replacements: options.replaceAll === true ? count : 1 };
}

/** Reference delete tool: removes a file or symlink (never a folder, never following a link). */
export async function deletePath(context: ToolContext, filePath: string): Promise<void> {
  const projectPath = toProjectPath(context.projectRoot, filePath);
  await resolveInsideRoot(nodeFileSystem, context.projectRoot, projectPath);
  await observed(context, projectPath, 'delete', () =>
    inHeldFolders(context.projectRoot, [projectPath], false, async (reached) => {
      const stats = await fs.lstat(reached);
      if (stats.isDirectory()) throw new CheckpointError('INVALID_ARGUMENT', `refusing to delete a folder: ${filePath}`, { path: filePath });
      await fs.unlink(reached);
    }),
  );
}

/** Reference move tool: renames a file or symlink inside the project; both ends are observed. */
export async function movePath(context: ToolContext, from: string, to: string): Promise<void> {
  const source = toProjectPath(context.projectRoot, from);
  const destination = toProjectPath(context.projectRoot, to);
  const sourceAbs = (await resolveInsideRoot(nodeFileSystem, context.projectRoot, source)).absolute;
  await resolveInsideRoot(nodeFileSystem, context.projectRoot, destination);
  if ((await fs.lstat(sourceAbs)).isDirectory()) {
    throw new CheckpointError('INVALID_ARGUMENT', `refusing to move a folder: ${from}`, { path: from });
  }
  const op: WriteOp = context.callId === undefined ? { kind: 'move' } : { kind: 'move', callId: context.callId };
  await context.observer?.beforeWrite(source, op);
  await context.observer?.beforeWrite(destination, op);
  try {
    await inHeldFolders(context.projectRoot, [source, destination], true, (sourceAt, destinationAt) => fs.rename(sourceAt as string, destinationAt as string));
  } finally {
    await context.observer?.afterWrite(source, op);
    await context.observer?.afterWrite(destination, op);
  }
}
