import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError, errnoCode } from '../core/errors.js';
import { resolveInsideRoot, toProjectPath } from '../fs/paths.js';
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
  const op: WriteOp = context.callId === undefined ? { kind } : { kind, callId: context.callId };
  await context.observer?.beforeWrite(projectPath, op);
  try {
    return await mutate(absolute);
  } finally {
    await context.observer?.afterWrite(projectPath, op);
  }
}

async function refuseSymlinkLeaf(absolute: string, shown: string): Promise<void> {
  try {
    if ((await fs.lstat(absolute)).isSymbolicLink()) {
      throw new CheckpointError('INVALID_PATH', `refusing to write through a symlink: ${shown}`, { path: shown });
    }
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}

/**
 * Reference `write_file` tool: creates or replaces a file (creating parent folders), never writing
 * through a symlink. Keeps the mode of an existing file.
 */
export async function writeFile(context: ToolContext, filePath: string, content: string | Uint8Array): Promise<void> {
  await guardedWrite(context, filePath, async (absolute) => {
    await refuseSymlinkLeaf(absolute, filePath);
    await fs.mkdir(path.dirname(absolute), { recursive: true });
    await fs.writeFile(absolute, content);
  });
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
  const { absolute } = await resolveInsideRoot(nodeFileSystem, context.projectRoot, projectPath);
  await refuseSymlinkLeaf(absolute, filePath);
  const before = await fs.readFile(absolute, 'utf8');
  const count = before.split(oldText).length - 1;
  if (count === 0) throw new CheckpointError('INVALID_ARGUMENT', `text to replace not found in ${projectPath}`, { path: projectPath });
  if (count > 1 && options.replaceAll !== true) {
    throw new CheckpointError('INVALID_ARGUMENT', `text to replace occurs ${count} times in ${projectPath}; pass replaceAll or more context`, { path: projectPath });
  }
  const after = options.replaceAll === true ? before.split(oldText).join(newText) : before.replace(oldText, () => newText);
  await guardedWrite(context, projectPath, (abs) => fs.writeFile(abs, after), 'edit');
  return { replacements: options.replaceAll === true ? count : 1 };
}

/** Reference delete tool: removes a file or symlink (never a folder, never following a link). */
export async function deletePath(context: ToolContext, filePath: string): Promise<void> {
  await guardedWrite(
    context,
    filePath,
    async (absolute) => {
      const stats = await fs.lstat(absolute);
      if (stats.isDirectory()) throw new CheckpointError('INVALID_ARGUMENT', `refusing to delete a folder: ${filePath}`, { path: filePath });
      await fs.unlink(absolute);
    },
    'delete',
  );
}

/** Reference move tool: renames a file or symlink inside the project; both ends are observed. */
export async function movePath(context: ToolContext, from: string, to: string): Promise<void> {
  const source = toProjectPath(context.projectRoot, from);
  const destination = toProjectPath(context.projectRoot, to);
  const sourceAbs = (await resolveInsideRoot(nodeFileSystem, context.projectRoot, source)).absolute;
  const destinationAbs = (await resolveInsideRoot(nodeFileSystem, context.projectRoot, destination)).absolute;
  if ((await fs.lstat(sourceAbs)).isDirectory()) {
    throw new CheckpointError('INVALID_ARGUMENT', `refusing to move a folder: ${from}`, { path: from });
  }
  const op: WriteOp = context.callId === undefined ? { kind: 'move' } : { kind: 'move', callId: context.callId };
  await context.observer?.beforeWrite(source, op);
  await context.observer?.beforeWrite(destination, op);
  try {
    await fs.mkdir(path.dirname(destinationAbs), { recursive: true });
    await fs.rename(sourceAbs, destinationAbs);
  } finally {
    await context.observer?.afterWrite(source, op);
    await context.observer?.afterWrite(destination, op);
  }
}
