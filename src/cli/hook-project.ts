import { readFile, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { CheckpointError } from '../index.js';
import { installedEvents, realPathOf, type AgentSpec } from '../hooks.js';
import { PROJECT_CONFIG } from './config-file.js';
import { gitRepoFor, loadContext, storeExists, type CliContext, type GlobalOptions } from './context.js';
import type { Invocation } from './invocation.js';

// Where an agent's hook event works, and whether that is a project at all. A hook fires in
// whatever folder the agent runs in — a user-scope hook fires everywhere — so unlike a command
// a person types, a hook takes pictures only where someone made the folder a project.

/**
 * System folders that are never a hook's project: pseudo file systems (anything below them) and
 * the system's own top folders (exactly these: a repository deeper inside is a project).
 */
const SYSTEM_TREES = ['/proc', '/sys', '/dev', '/run'];
const SYSTEM_FOLDERS = new Set(['/etc', '/usr', '/usr/local', '/var', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/boot', '/opt', '/srv', '/tmp', '/mnt', '/media', '/home', '/root', '/private', '/private/etc', '/private/var', '/private/tmp', '/System', '/Library', '/Applications', '/Users', '/Volumes']);

/** Why `folder` (canonical) is a system folder no hook pictures, or `undefined`. */
export function systemFolderRefusal(folder: string): string | undefined {
  if (SYSTEM_FOLDERS.has(folder) || SYSTEM_TREES.some((tree) => folder === tree || folder.startsWith(`${tree}/`))) return `${folder} is a system folder`;
  return undefined;
}

/** True when `file` is a regular file. */
async function isFile(file: string): Promise<boolean> {
  try {
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

/** True when the agent's project-scope hook file at `root` holds turnback's hooks. */
async function hooksInstalledAt(spec: AgentSpec, root: string): Promise<boolean> {
  try {
    const settings = JSON.parse(await readFile(path.join(root, spec.files.project), 'utf8')) as unknown;
    return typeof settings === 'object' && settings !== null && !Array.isArray(settings) && installedEvents(spec, settings as Parameters<typeof installedEvents>[1]).length > 0;
  } catch {
    return false;
  }
}

/**
 * The context of a hook event whose folder is `folder` (the payload's `cwd`, else the hook
 * process's), or why it takes no pictures. The folder is resolved to its real path first (the
 * agent may reach the project through a symlink). A project for a hook is a git work tree, or a
 * folder with a `turnback.toml`, an existing store, or this agent's hooks installed in its
 * project scope; system folders never are (`/`, the home folder, `/etc`, `/usr`, `/proc`, …).
 *
 * @throws CheckpointError `INVALID_PATH` when the folder does not exist, is not a folder, or its
 *   name is too long for the file system.
 */
export async function hookContext(spec: AgentSpec, folder: string, options: GlobalOptions, invocation: Invocation): Promise<{ context: CliContext; refusal?: string }> {
  const { real } = await realPathOf(folder, invocation.cwd);
  let isFolder = false;
  try {
    isFolder = (await stat(real)).isDirectory();
  } catch {
    // Reported below, typed.
  }
  if (!isFolder) throw new CheckpointError('INVALID_PATH', `the hook's folder is not a folder that exists: ${folder}`, { path: folder });
  const context = await loadContext(options, { ...invocation, cwd: real });
  if (context.refusal !== undefined) return { context, refusal: context.refusal };
  const system = systemFolderRefusal(context.projectRoot);
  if (system !== undefined) return { context, refusal: system };
  if (options.project !== undefined) return { context };
  if ((await gitRepoFor(context)) !== undefined) return { context };
  if ((await isFile(path.join(context.projectRoot, PROJECT_CONFIG))) || (await storeExists(context)) || (await hooksInstalledAt(spec, context.projectRoot))) return { context };
  return { context, refusal: `${context.projectRoot} is not a project: not a git work tree, and no ${PROJECT_CONFIG}, store or ${spec.title} hooks of its own` };
}
