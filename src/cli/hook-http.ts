import { execFile } from 'node:child_process';
import { lstat, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { AgentSpec, HttpHookTarget } from '../hooks.js';
import { ensureEndpoint, readEndpoint, stateFolder, type HookEndpoint } from '../server/hook-endpoint.js';
import { serverRunning } from './server-command.js';

// Where `turnback hooks install claude` puts HTTP hooks, and what they carry (issue #28). An
// HTTP hook names this machine's port and the user's secret, so it never goes in a file a project
// commits: a project install writes the agent's own file of this machine (Claude Code's
// `.claude/settings.local.json`), made owner-only and kept out of git; `--user` writes the user's
// own file. The secret is written only into a file no one else can read.

/** The header names as the agent's file spells them. */
const SECRET_HEADER_NAME = 'X-Turnback-Secret';

/** What install does for an agent that runs HTTP hooks: where they go and what they post to, or why it uses command hooks instead. */
export type HttpPlan = { file: string; endpoint: HookEndpoint; target(event: string): HttpHookTarget | undefined } | { refused: string };

/** The mode bits others have on `file`, or `undefined` when it does not exist. */
async function othersBits(file: string): Promise<number | undefined> {
  try {
    return (await lstat(file)).mode & 0o077;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * The plan for `spec`'s HTTP hooks: the file (the project's local one, or `userFile`), the
 * endpoint (a server started when none has listened yet, so the port is known), and each
 * event's target; a reason instead when the secret cannot be kept or the file is readable by others.
 */
export async function httpPlanFor(spec: AgentSpec, projectRoot: string, user: boolean, userFile: string): Promise<HttpPlan | undefined> {
  if (spec.http === undefined) return undefined;
  const file = user ? userFile : path.join(projectRoot, spec.http.localFile);
  const folder = stateFolder();
  if (folder === undefined) return { refused: "turnback's state folder cannot be made owner-only here, so no secret can be kept" };
  const bits = await othersBits(file);
  if (bits !== undefined && bits !== 0) return { refused: `${file} can be read by other users, so the hooks' secret is not written there (\`chmod 600\` it and install again)` };
  let endpoint = ensureEndpoint(folder);
  if (endpoint.port === 0) {
    if (!(await serverRunning())) return { refused: 'no command server can run here (TURNBACK_SERVER=off, or no private socket folder)' };
    endpoint = readEndpoint(folder) ?? endpoint;
  }
  if (endpoint.port === 0) return { refused: 'the command server did not listen for hooks' };
  const { port, secret } = endpoint;
  const events = new Set(spec.http.events);
  return { file, endpoint, target: (event) => (events.has(event) ? { url: `http://127.0.0.1:${port}/hook/${spec.name}/${event}`, headers: { [SECRET_HEADER_NAME]: secret } } : undefined) };
}

/** Git's answer to whether `file` is ignored in `root`: true, false, or `undefined` (not a work tree, no git). */
function gitIgnores(root: string, file: string): Promise<boolean | undefined> {
  return new Promise((resolve) => {
    execFile('git', ['check-ignore', '-q', '--', path.relative(root, file)], { cwd: root, timeout: 10_000 }, (error) => {
      if (error === null) resolve(true);
      else resolve((error as { code?: unknown }).code === 1 ? false : undefined);
    });
  });
}

/** What install did to keep the local file out of git, so uninstall can take exactly that back. */
export interface IgnoreEdit {
  /** The `.gitignore` beside the local file. */
  file: string;
  /** True when install made it. */
  created: boolean;
  line: string;
}

/**
 * Makes git ignore the local hook file (it holds the secret) when it does not already: the line
 * `settings.local.json` in the `.gitignore` of its folder, made or appended. `undefined` when git
 * ignores it already or the project is not a git work tree.
 */
export async function keepOutOfGit(projectRoot: string, file: string): Promise<IgnoreEdit | undefined> {
  if ((await gitIgnores(projectRoot, file)) !== false) return undefined;
  const ignore = path.join(path.dirname(file), '.gitignore');
  const line = path.basename(file);
  let text: string | undefined;
  try {
    text = await readFile(ignore, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await writeFile(ignore, `${text ?? ''}${text !== undefined && text.length > 0 && !text.endsWith('\n') ? '\n' : ''}${line}\n`);
  return { file: ignore, created: text === undefined, line };
}

/** Takes back what {@link keepOutOfGit} did: the line goes, and the file too when install made it and nothing else is left. */
export async function undoIgnoreEdit(edit: IgnoreEdit): Promise<void> {
  let text: string;
  try {
    text = await readFile(edit.file, 'utf8');
  } catch {
    return;
  }
  const lines = text.split('\n');
  const at = lines.lastIndexOf(edit.line);
  if (at < 0) return;
  lines.splice(at, 1);
  const left = lines.join('\n');
  if (edit.created && left.trim().length === 0) await rm(edit.file, { force: true });
  else await writeFile(edit.file, left);
}
