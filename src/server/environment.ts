// The part of a client's environment that travels with its request to the per-user server, and
// the checks the server makes on it. Small on purpose: the client loads this and nothing heavy.

/**
 * The environment a command's outcome can depend on: what turnback reads (its own variables, the
 * XDG folders, HOME, colour, the time zone), what the git it asks reads (GIT_*, PATH, the
 * locale), what a Node child it starts reads (NODE_*) and what the AWS SDK reads for a store on
 * S3 (AWS_*: its settings and credentials). A served command sees exactly the client's values of
 * these, and the server's own for everything else. TURNBACK_RUN is left out: it marks the
 * processes of a run, and a server must never carry one.
 */
const RELEVANT = /^(HOME|USER|LOGNAME|PATH|TZ|TMPDIR|TERM|NO_COLOR|FORCE_COLOR|NODE_[A-Z0-9_]+|LANG|LANGUAGE|LC_[A-Z]+|XDG_[A-Z_]+|GIT_[A-Z0-9_]+|AWS_[A-Z0-9_]+|TURNBACK_[A-Z0-9_]+)$/;

/** The variable that marks the processes of a run; never relayed, never carried by a server. */
const RUN_MARK = 'TURNBACK_RUN';

/** The most variables a request may carry. */
export const MAX_RELAYED_VARIABLES = 1024;

/**
 * The most characters (names and values together) a request's environment may hold: far above
 * any real one (Linux caps one variable at 128 KiB), and small beside a hook's payload.
 */
export const MAX_RELAYED_CHARS: number = 256 * 1024;

/** Whether a served command takes variable `name` from its client. */
export function isRelayedName(name: string): boolean {
  return RELEVANT.test(name) && name !== RUN_MARK;
}

/** The variables of `env` a request carries (`isRelayedName`), with their values. */
export function relayedVariables(env: NodeJS.ProcessEnv): Record<string, string> {
  const relayed: Record<string, string> = {};
  for (const name of Object.keys(env).sort()) {
    const value = env[name];
    if (value !== undefined && isRelayedName(name)) relayed[name] = value;
  }
  return relayed;
}

/**
 * `value` as a request's environment, or `undefined` when it is not one a client of ours sends:
 * not a plain object of strings, a name outside the relayed set, a NUL (no process can hold
 * one), more than {@link MAX_RELAYED_VARIABLES} variables or {@link MAX_RELAYED_CHARS} characters.
 * The client checks the same bounds before it sends, and runs the command itself when its own
 * environment is past them.
 */
export function checkedVariables(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const names = Object.keys(value);
  if (names.length > MAX_RELAYED_VARIABLES) return undefined;
  const checked: Record<string, string> = Object.create(null) as Record<string, string>;
  let chars = 0;
  for (const name of names) {
    const text = (value as Record<string, unknown>)[name];
    if (!isRelayedName(name) || typeof text !== 'string' || text.includes('\0')) return undefined;
    chars += name.length + text.length;
    if (chars > MAX_RELAYED_CHARS) return undefined;
    checked[name] = text;
  }
  return checked;
}

/**
 * glibc's malloc settings for the server (read from `GLIBC_TUNABLES` at its start; other C
 * libraries ignore the variable). By default glibc gives each thread that allocates its own arena
 * (up to 8 a core) and raises its mmap threshold after a large block is freed, so the buffers a
 * big picture frees (chunk texts, brotli's on libuv's pool threads, the stat helper's) stay in
 * arenas as resident pages. Two arenas and a fixed 128 KiB mmap and trim threshold return them:
 * at 250,000 files the resting RSS fell by ~25 MiB and the peak by ~10–15 MiB (bench/RESULTS.md,
 * "malloc's arenas"). They change how memory is held, never a result.
 */
export const SERVER_MALLOC_TUNABLES: readonly (readonly [string, string])[] = [
  ['glibc.malloc.arena_max', '2'],
  ['glibc.malloc.mmap_threshold', '131072'],
  ['glibc.malloc.trim_threshold', '131072'],
];

/**
 * `GLIBC_TUNABLES` for the server: the person's own value with {@link SERVER_MALLOC_TUNABLES}
 * added for every tunable it does not set (a setting of theirs wins).
 */
export function serverTunables(existing: string | undefined): string {
  const own = (existing ?? '').split(':').filter((entry) => entry !== '');
  const named = new Set(own.map((entry) => entry.split('=')[0]));
  return [...own, ...SERVER_MALLOC_TUNABLES.filter(([name]) => !named.has(name)).map(([name, value]) => `${name}=${value}`)].join(':');
}

/**
 * The environment a server is started with: the client's, without TURNBACK_RUN, with the
 * server's malloc settings ({@link serverTunables}). The programs the server starts (git, its
 * watchman service) inherit them.
 */
export function serverEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const copy = { ...env };
  delete copy[RUN_MARK];
  copy.GLIBC_TUNABLES = serverTunables(env.GLIBC_TUNABLES);
  return copy;
}
