import { mkdir } from 'node:fs/promises';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import writeFileAtomic from 'write-file-atomic';
import { resolveCheckpointConfig, type ResolvedCheckpointConfig } from '../admin.js';
import { CheckpointError, type CheckpointConfig } from '../index.js';
import { readRegularText } from '../fs/regular-file.js';

/** The project config file name, at the project root. */
export const PROJECT_CONFIG = 'turnback.toml';

/** One config file that was read (or looked for). */
export interface ConfigSource {
  file: string;
  /** False when the file does not exist. */
  found: boolean;
  /** Its `[checkpoints]` table, `dir` made absolute against the file's folder. */
  table: CheckpointConfig;
  /** The file's text ('' when missing), for the per-project switches of the user's file. */
  text: string;
}

/** The CLI's view of the config: merged tables, resolved, and where `enabled` came from. */
export interface CliConfig {
  resolved: ResolvedCheckpointConfig;
  /** On unless a config says `enabled = false` (the CLI default is on; the library's is off). */
  enabled: boolean;
  /** The file that set `enabled`, when one did. */
  enabledBy?: string;
  user: ConfigSource;
  project: ConfigSource;
}

/** `$XDG_CONFIG_HOME/turnback/config.toml`, else `~/.config/turnback/config.toml`. */
export function userConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(homeFolder(env), '.config');
  return path.join(base, 'turnback', 'config.toml');
}

/** A config file's TOML, parsed. @throws CheckpointError `INVALID_CONFIG` naming the file. */
function parseConfigToml(text: string, file: string): Record<string, unknown> {
  try {
    return parseToml(text) as Record<string, unknown>;
  } catch (error) {
    throw new CheckpointError('INVALID_CONFIG', `${file} is not valid TOML: ${(error as Error).message}`, { path: file, cause: error });
  }
}

/**
 * The `[checkpoints]` table of a TOML text. Pure.
 *
 * @throws CheckpointError `INVALID_CONFIG` for bad TOML or a `checkpoints` that is not a table.
 */
export function checkpointsTable(text: string, file: string): CheckpointConfig {
  const parsed = parseConfigToml(text, file);
  const table = parsed.checkpoints;
  if (table === undefined) return {};
  if (typeof table !== 'object' || table === null || Array.isArray(table)) {
    throw new CheckpointError('INVALID_CONFIG', `${file}: checkpoints must be a table`, { path: file });
  }
  // Validate early so the message names the file the mistake is in.
  try {
    resolveCheckpointConfig(table);
  } catch (error) {
    throw new CheckpointError('INVALID_CONFIG', `${file}: ${(error as Error).message}`, { path: file, cause: error });
  }
  return { ...(table as CheckpointConfig) };
}

async function readSource(file: string): Promise<ConfigSource> {
  let text: string;
  try {
    text = await readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { file, found: false, table: {}, text: '' };
    // A FIFO, a folder or a device named like the config: refused, never waited on.
    if (error instanceof CheckpointError) throw new CheckpointError('INVALID_CONFIG', error.message, { path: file, ...(error.found !== undefined ? { found: error.found } : {}), cause: error });
    throw new CheckpointError('INVALID_CONFIG', `cannot read ${file}: ${(error as Error).message}`, { path: file, cause: error });
  }
  const table = checkpointsTable(text, file);
  // An `s3://` location is no path: it stays as written.
  if (table.dir !== undefined && !table.dir.startsWith('s3://')) table.dir = expandDir(table.dir, path.dirname(file));
  return { file, found: true, table, text };
}

/** `~/x` and relative dirs, made absolute against the config file's folder. */
export function expandDir(dir: string, base: string): string {
  if (dir === '~' || dir.startsWith('~/')) return path.join(homeFolder(), dir.slice(1));
  return path.resolve(base, dir);
}

/** Merges tables: later tables override earlier ones key by key. Pure. */
export function mergeTables(...tables: CheckpointConfig[]): CheckpointConfig {
  return Object.assign({}, ...tables) as CheckpointConfig;
}

/**
 * Loads the user's and the project's config; the project overrides the user.
 *
 * @throws CheckpointError `INVALID_CONFIG`
 */
export async function loadCliConfig(projectRoot: string, env: NodeJS.ProcessEnv = process.env): Promise<CliConfig> {
  const user = await readSource(userConfigPath(env));
  const project = await readSource(path.join(projectRoot, PROJECT_CONFIG));
  const merged = mergeTables(user.table, project.table);
  const resolved = resolveCheckpointConfig(merged);
  // The switch `turnback off`/`on` keeps for this project in the user's file, under
  // [projects."<root>"], sits between the project's file and the user's [checkpoints].
  const switched = projectSwitchOf(user.text, projectRoot, user.file);
  const enabled = project.table.enabled ?? switched ?? user.table.enabled ?? true;
  const enabledBy =
    project.table.enabled !== undefined ? project.file : switched !== undefined ? `${user.file} [projects.${JSON.stringify(projectRoot)}]` : user.table.enabled !== undefined ? user.file : undefined;
  return { resolved, enabled, ...(enabledBy !== undefined ? { enabledBy } : {}), user, project };
}

/** The `enabled` a user's config text keeps for `projectRoot` under `[projects."<root>"]`, if any. Pure. */
export function projectSwitchOf(text: string, projectRoot: string, file: string): boolean | undefined {
  if (text.length === 0) return undefined;
  const parsed = parseConfigToml(text, file);
  const projects = parsed.projects;
  if (typeof projects !== 'object' || projects === null) return undefined;
  const entry = (projects as Record<string, unknown>)[projectRoot];
  if (typeof entry !== 'object' || entry === null) return undefined;
  const value = (entry as Record<string, unknown>).enabled;
  if (value !== undefined && typeof value !== 'boolean') throw new CheckpointError('INVALID_CONFIG', `${file}: projects.${JSON.stringify(projectRoot)}.enabled must be true or false`, { path: file });
  return value;
}

/**
 * Sets `enabled` for `projectRoot` in the user's config text, in its `[projects."<root>"]` table
 * (added at the end when missing), keeping every other line. Pure.
 *
 * @throws CheckpointError `INVALID_CONFIG` when the result would not read back as asked.
 */
export function setProjectSwitchInToml(text: string, projectRoot: string, enabled: boolean, file: string): string {
  const header = `[projects.${JSON.stringify(projectRoot)}]`;
  const result = setEnabledInTable(text, enabled, (line) => line.trim() === header, header);
  if (projectSwitchOf(result, projectRoot, file) !== enabled) {
    throw new CheckpointError('INVALID_CONFIG', `${file} spells ${header} in a way turnback cannot edit; set enabled = ${enabled} there by hand`, { path: file });
  }
  return result;
}

/** Keeps `enabled` for `projectRoot` in the user's config file (created, owner-only folder, when missing), atomically. */
export async function writeUserSwitch(projectRoot: string, enabled: boolean, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const file = userConfigPath(env);
  const next = setProjectSwitchInToml(await textOrEmpty(file), projectRoot, enabled, file);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  await writeFileAtomic(file, next);
  return file;
}

const HEADER = /^\s*\[\s*checkpoints\s*\]\s*(#.*)?$/;
const ANY_HEADER = /^\s*\[/;
const ENABLED = /^\s*enabled\s*=/;

/**
 * Sets `enabled` in the `[checkpoints]` table of a TOML text, keeping every other line (and its
 * comments) as it is. Pure.
 *
 * @throws CheckpointError `INVALID_CONFIG` when the text spells the table in a way this edit cannot
 *   change safely (dotted keys, an inline table): the user edits it by hand.
 */
export function setEnabledInToml(text: string, enabled: boolean, file: string = PROJECT_CONFIG): string {
  const result = setEnabledInTable(text, enabled, (line) => HEADER.test(line), '[checkpoints]');
  if (checkpointsTable(result, file).enabled !== enabled) {
    throw new CheckpointError('INVALID_CONFIG', `${file} spells [checkpoints] in a way turnback cannot edit; set enabled = ${enabled} there by hand`, { path: file });
  }
  return result;
}

/**
 * Sets the `enabled` line of the table whose header `isHeader` recognises (the table `header`
 * is added at the end when there is none), keeping every other line. Pure; the caller re-parses.
 */
function setEnabledInTable(text: string, enabled: boolean, isHeader: (line: string) => boolean, header: string): string {
  const lines = text.length === 0 ? [] : text.replace(/\r?\n$/, '').split(/\r?\n/);
  const value = `enabled = ${enabled}`;
  const at = lines.findIndex(isHeader);
  if (at === -1) {
    if (lines.length > 0 && lines[lines.length - 1] !== '') lines.push('');
    lines.push(header, value);
  } else {
    let end = lines.length;
    for (let i = at + 1; i < lines.length; i++) {
      if (ANY_HEADER.test(lines[i] as string)) {
        end = i;
        break;
      }
    }
    const line = lines.slice(at + 1, end).findIndex((candidate) => ENABLED.test(candidate));
    if (line === -1) lines.splice(at + 1, 0, value);
    else lines[at + 1 + line] = value;
  }
  return `${lines.join('\n')}\n`;
}

/** A config file's text, or '' when it does not exist. */
async function textOrEmpty(file: string): Promise<string> {
  try {
    return await readRegularText(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
    if (error instanceof CheckpointError) throw error;
    throw new CheckpointError('IO', `cannot read ${file}`, { path: file, cause: error });
  }
}

/** Writes `enabled` into the project's turnback.toml (created when missing), atomically. */
export async function writeProjectEnabled(projectRoot: string, enabled: boolean): Promise<string> {
  const file = path.join(projectRoot, PROJECT_CONFIG);
  const next = setEnabledInToml(await textOrEmpty(file), enabled, file);
  await writeFileAtomic(file, next);
  return file;
}
