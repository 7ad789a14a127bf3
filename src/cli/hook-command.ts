import { accessSync, constants, realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { hookCommandText, type HookRunner } from '../hooks/settings.js';
import type { AgentName } from '../hooks/agents.js';

// What an installed hook runs, and whether it would run here. A project's hook file is committed
// and read on every teammate's machine, so it names `turnback` (when `turnback` on PATH is this
// very install) or `npx turnback`, never this machine's paths; the user's own file, read by this
// machine alone, runs this Node and this turnback by absolute path (an agent's hooks run with the
// agent's PATH, on which `turnback` may not be).

/** This install's command file (dist/cli/turnback.cjs). */
export function thisCli(): string {
  return path.join(__dirname, 'turnback.cjs');
}

/** The executable `name` on `searchPath` (a PATH value), or `undefined`. */
export function findOnPath(name: string, searchPath: string | undefined): string | undefined {
  for (const folder of (searchPath ?? '').split(path.delimiter)) {
    if (folder === '' || !path.isAbsolute(folder)) continue;
    const candidate = path.join(folder, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here: the next folder.
    }
  }
  return undefined;
}

function realOrSelf(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** True when `turnback` on `searchPath` is this very install (a global install links its bin to this file). */
export function turnbackOnPathIsThis(searchPath: string | undefined): boolean {
  const found = findOnPath('turnback', searchPath);
  return found !== undefined && realOrSelf(found) === realOrSelf(thisCli());
}

/** How the hooks of a scope reach turnback: see the file's head. */
export function runnerFor(user: boolean, searchPath: string | undefined): HookRunner {
  if (user) return { kind: 'path', node: process.execPath, cli: thisCli() };
  return turnbackOnPathIsThis(searchPath) ? { kind: 'name' } : { kind: 'npx' };
}

/** The command an installed hook runs for `agent`'s `event` in the chosen scope. */
export function hookCommandLine(agent: AgentName, event: string, user: boolean, searchPath: string | undefined = process.env.PATH): string {
  return hookCommandText(agent, event, runnerFor(user, searchPath));
}

/** The words before ` hook ` of one of turnback's commands, as a shell reads them (single quotes). */
function programWords(command: string): string[] {
  const at = command.search(/ hook \S+ \S+$/);
  const head = at < 0 ? command : command.slice(0, at);
  const words: string[] = [];
  for (const match of head.matchAll(/'((?:[^']|'\\'')*)'|(\S+)/g)) words.push(match[1] !== undefined ? match[1].replace(/'\\''/g, "'") : (match[2] as string));
  return words;
}

/**
 * Why `command` (one of turnback's installed hooks) would not run here, or `undefined` when its
 * program is found: a bare name not on `searchPath`, an absolute path that is not there.
 */
export function commandProblem(command: string, searchPath: string | undefined): string | undefined {
  for (const word of programWords(command).slice(0, 2)) {
    if (path.isAbsolute(word)) {
      try {
        if (statSync(word).isFile()) continue;
      } catch {
        // Reported below.
      }
      return `${word} does not exist here`;
    }
    if (word.includes('=') || !/^[A-Za-z0-9_.@+-]+$/.test(word)) continue;
    if (word === 'turnback' && programWords(command)[0] === 'npx') continue;
    if (findOnPath(word, searchPath) === undefined) return `\`${word}\` is not on PATH here`;
  }
  return undefined;
}
