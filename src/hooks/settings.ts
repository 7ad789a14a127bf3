import type { AgentSpec } from './agents.js';

// turnback's hooks in an agent's configuration (pure: a parsed file in, a new one out). Install
// adds one hook per event the agent's row names and keeps everything else the file holds;
// running it again changes nothing; uninstall removes exactly what install added, so a file
// that had no hooks before has none after, and a file install created is removed.

/** A JSON object as parsed. */
export type JsonObject = Record<string, unknown>;

/**
 * How an installed hook reaches turnback: by name (`turnback`, on the agent's PATH), through npx
 * (the project's own turnback, else npm's), or by this machine's paths (a file only this machine
 * reads: the user's own settings).
 */
export type HookRunner = { kind: 'name' } | { kind: 'npx' } | { kind: 'path'; node: string; cli: string };

/** A word as a POSIX shell reads it back: bare when it can be, else single-quoted. */
function quoted(word: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command line of `agent`'s hook for `event`. A file teams commit gets `turnback hook …` or
 * `npx turnback hook …`: the same text on every machine (Codex trusts a hook by its command's text).
 */
export function hookCommandText(agent: string, event: string, runner: HookRunner): string {
  const program = runner.kind === 'name' ? 'turnback' : runner.kind === 'npx' ? 'npx turnback' : `${quoted(runner.node)} ${quoted(runner.cli)}`;
  return `${program} hook ${agent} ${event}`;
}

/** The distinct commands of turnback's hooks for `spec` in `settings`. */
export function ourCommands(spec: AgentSpec, settings: JsonObject): string[] {
  const hooks = settings.hooks;
  if (!isObject(hooks)) return [];
  const found = new Set<string>();
  for (const event of Object.keys(spec.events)) {
    const list = hooks[event];
    if (!Array.isArray(list)) continue;
    for (const item of list) {
      const entries: unknown[] = spec.format === 'matcher-groups' ? (isObject(item) && Array.isArray(item.hooks) ? item.hooks : []) : [item];
      for (const entry of entries) {
        const command = commandOf(entry);
        if (typeof command === 'string' && isOurCommand(command, spec.name)) found.add(command);
      }
    }
  }
  return [...found];
}

/** True for a command turnback's install wrote for `agent` (`… turnback.cjs' hook claude PreToolUse`). */
export function isOurCommand(command: unknown, agent: string): boolean {
  return typeof command === 'string' && new RegExp(`turnback(?:\\.cjs)?['"]? hook ${agent} `).test(`${command} `);
}

/** True for the URL of an HTTP hook turnback's install wrote for `agent` (`http://127.0.0.1:PORT/hook/claude/PreToolUse`). */
export function isOurUrl(url: unknown, agent: string): boolean {
  return typeof url === 'string' && new RegExp(`^http://127\\.0\\.0\\.1:[0-9]{1,5}/hook/${agent}/[A-Za-z]+$`).test(url);
}

/** True for a hook entry turnback's install wrote for `agent`: its command, or its HTTP hook. */
function isOurEntry(entry: unknown, agent: string): boolean {
  return isOurCommand(commandOf(entry), agent) || (isObject(entry) && entry.type === 'http' && isOurUrl(entry.url, agent));
}

/** An HTTP hook of an agent that runs them (Claude Code): where it posts, and the headers it sends. */
export interface HttpHookTarget {
  url: string;
  headers: Record<string, string>;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The command of one hook entry, whatever the format calls it. */
function commandOf(entry: unknown): unknown {
  if (!isObject(entry)) return undefined;
  return entry.command ?? entry.bash;
}

/** The hook entry install writes for `event`: an HTTP hook when `http` is given (matcher-group agents only). */
function entryFor(spec: AgentSpec, command: string, http?: HttpHookTarget): JsonObject {
  if (http !== undefined && spec.format === 'matcher-groups') return { type: 'http', url: http.url, headers: http.headers, [spec.timeout.field]: spec.timeout.value };
  switch (spec.format) {
    case 'matcher-groups':
      return { type: 'command', command, [spec.timeout.field]: spec.timeout.value };
    case 'flat':
      return { command };
    case 'typed-flat':
      return { type: 'command', bash: command, [spec.timeout.field]: spec.timeout.value };
  }
}

/**
 * Does `list` (the event's array) hold our hook for this command already, with the time limit
 * install writes? An earlier install's entry of another limit (Qwen Code's 30, read as 30 ms) is
 * not ours as it should be: it is replaced.
 */
function holdsOurs(spec: AgentSpec, list: unknown[], command: string, http?: HttpHookTarget): boolean {
  const expected = entryFor(spec, command, http);
  const same = (entry: unknown): boolean => isObject(entry) && Object.entries(expected).every(([key, value]) => JSON.stringify(entry[key]) === JSON.stringify(value));
  return list.some((item) => (spec.format === 'matcher-groups' ? isObject(item) && Array.isArray(item.hooks) && item.hooks.some(same) : same(item)));
}

/** `list` without turnback's own hooks (and without a matcher group that held only them). */
function withoutOurs(spec: AgentSpec, list: unknown[]): unknown[] {
  const kept: unknown[] = [];
  for (const item of list) {
    if (spec.format !== 'matcher-groups') {
      if (!isOurEntry(item, spec.name)) kept.push(item);
      continue;
    }
    if (!isObject(item) || !Array.isArray(item.hooks)) {
      kept.push(item);
      continue;
    }
    const hooks = item.hooks.filter((h) => !isOurEntry(h, spec.name));
    if (hooks.length === item.hooks.length) kept.push(item);
    else if (hooks.length > 0) kept.push({ ...item, hooks });
  }
  return kept;
}

/** What {@link installHooks} did. */
export interface InstallResult {
  settings: JsonObject;
  /** The events whose hook was added (or replaced: an earlier install's command of another path). */
  added: string[];
}

/**
 * `settings` with turnback's hook on every event of `spec`, each running `commandFor(event)`.
 * Idempotent: an event that holds the same command already is left as it is.
 *
 * @throws Error when `settings.hooks` (or one event's list) is not of the shape the agent reads.
 */
export function installHooks(spec: AgentSpec, settings: JsonObject, commandFor: (event: string) => string, httpFor: (event: string) => HttpHookTarget | undefined = () => undefined): InstallResult {
  const hooks = settings.hooks ?? {};
  if (!isObject(hooks)) throw new Error('its "hooks" is not an object');
  const next: JsonObject = { ...hooks };
  const added: string[] = [];
  for (const [event, kind] of Object.entries(spec.events)) {
    const list = next[event] ?? [];
    if (!Array.isArray(list)) throw new Error(`its "hooks.${event}" is not a list`);
    const command = commandFor(event);
    const http = httpFor(event);
    if (holdsOurs(spec, list, command, http)) continue;
    // An earlier install's hook (another path to turnback, a command where an HTTP hook goes now, another port) is replaced, never doubled.
    const kept = withoutOurs(spec, list);
    const entry = entryFor(spec, command, http);
    const tool = kind === 'before-tool' || kind === 'after-tool';
    const item = spec.format === 'matcher-groups' ? { ...(tool && spec.toolMatcher !== undefined ? { matcher: spec.toolMatcher } : {}), hooks: [entry] } : entry;
    next[event] = [...kept, item];
    added.push(event);
  }
  const versioned = spec.format === 'matcher-groups' || settings.version !== undefined ? {} : { version: 1 };
  // Only a file install makes gets the agent's format version: an existing file without one may
  // be of an older format the agent still has to migrate.
  const stamped = spec.settingsVersion !== undefined && Object.keys(settings).length === 0 ? { [spec.settingsVersion.key]: spec.settingsVersion.value } : {};
  return { settings: { ...versioned, ...settings, hooks: next, ...stamped }, added };
}

/** What {@link uninstallHooks} did. */
export interface UninstallResult {
  /** `undefined` when nothing is left: the file is removed. */
  settings: JsonObject | undefined;
  removed: string[];
}

/**
 * `settings` without turnback's hooks: events left empty go, `hooks` goes when it is left empty,
 * and a file left with nothing but what install added (`version: 1`) is `undefined` (removed).
 */
export function uninstallHooks(spec: AgentSpec, settings: JsonObject): UninstallResult {
  const hooks = settings.hooks;
  if (!isObject(hooks)) return { settings, removed: [] };
  const next: JsonObject = {};
  const removed: string[] = [];
  for (const [event, list] of Object.entries(hooks)) {
    if (!Array.isArray(list) || !Object.hasOwn(spec.events, event)) {
      next[event] = list;
      continue;
    }
    const kept = withoutOurs(spec, list);
    if (kept.length !== list.length || JSON.stringify(kept) !== JSON.stringify(list)) removed.push(event);
    if (kept.length > 0) next[event] = kept;
  }
  const rest: JsonObject = { ...settings };
  if (Object.keys(next).length > 0) rest.hooks = next;
  else delete rest.hooks;
  const keys = Object.keys(rest);
  const onlyVersion =
    keys.length === 1 && ((spec.format !== 'matcher-groups' && rest.version === 1) || (spec.settingsVersion !== undefined && removed.length > 0 && rest[spec.settingsVersion.key] === spec.settingsVersion.value));
  if (keys.length === 0 || onlyVersion) return { settings: undefined, removed };
  return { settings: rest, removed };
}

/** Which of `spec`'s events hold turnback's hook in `settings`. */
export function installedEvents(spec: AgentSpec, settings: JsonObject): string[] {
  const hooks = settings.hooks;
  if (!isObject(hooks)) return [];
  return Object.keys(spec.events).filter((event) => {
    const list = hooks[event];
    if (!Array.isArray(list)) return false;
    return list.some((item) =>
      spec.format === 'matcher-groups' ? isObject(item) && Array.isArray(item.hooks) && item.hooks.some((h) => isOurEntry(h, spec.name)) : isOurEntry(item, spec.name),
    );
  });
}

/** The indentation a JSON text uses (its first indented line), for writing it back the same way. */
export function indentationOf(text: string): string | number {
  const match = /\n([ \t]+)\S/.exec(text);
  return match?.[1] ?? 2;
}
