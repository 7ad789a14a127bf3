import { lstatSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

// Where the per-user command server listens (see server.ts), computed the same way by the small
// client and by the server. Small on purpose: the client loads this and nothing heavy.

/** Bumped whenever the frames between client and server change (3: a request carries the client's environment). */
export const PROTOCOL_VERSION = 3;

/** The hidden argument that starts `main.cjs` as the server. */
export const SERVE_FLAG = '--turnback-serve';

/**
 * The commands a server runs for a client: the ones that never ask the person anything (the
 * client relays output, signals and `run`'s command, not a terminal dialogue; for `hook` it
 * relays the agent's payload from its stdin). Every other
 * command runs in the person's own process.
 */
export const SERVED_COMMANDS: ReadonlySet<string> = new Set(['run', 'list', 'show', 'diff', 'status', 'config', 'hook']);

/** The variable that turns the server off (`TURNBACK_SERVER=off`): every command runs in its own process. */
export const SERVER_SWITCH = 'TURNBACK_SERVER';

/** Where this user's server for this build listens. */
export interface ServerAddress {
  /** The socket's path. */
  socket: string;
  /** The built command file the server runs (`dist/cli/main.cjs`). */
  mainFile: string;
}

/** Where systemd keeps each user's runtime folder (`/run/user/<uid>`), when a client has no XDG_RUNTIME_DIR. */
export const RUN_USER_ROOT = '/run/user';

/** True when `folder` is a real folder of user `uid` that nobody else can write into or read. */
function privateFolder(folder: string, uid: number): boolean {
  try {
    const stats = lstatSync(folder);
    // Another user's folder, or one others can write into, could hold a socket that is not ours.
    return stats.isDirectory() && stats.uid === uid && (stats.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

/**
 * The folder of this user's sockets: `$XDG_RUNTIME_DIR/turnback`; else, when systemd made the
 * user's runtime folder (`/run/user/<uid>`, private to them), `turnback` in it — so a client
 * started without XDG_RUNTIME_DIR (sudo, a cron job, an agent that trims its hooks' environment)
 * finds the same server as the person's shell —; else `<tmp>/turnback-<uid>`. Created
 * owner-only. `undefined` (no server: every command runs in-process) where it cannot be made
 * safe — not a folder, a symlink, another owner, open to others — or on a system without user
 * ids (Windows).
 */
export function socketFolder(env: NodeJS.ProcessEnv, runUserRoot: string = RUN_USER_ROOT): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const runtime = env.XDG_RUNTIME_DIR;
  const systemd = path.join(runUserRoot, String(uid));
  const folder =
    runtime !== undefined && path.isAbsolute(runtime) ? path.join(runtime, 'turnback') : privateFolder(systemd, uid) ? path.join(systemd, 'turnback') : path.join(os.tmpdir(), `turnback-${uid}`);
  // Every command asks: one lstat when it is there, a mkdir only when it is not.
  if (privateFolder(folder, uid)) return folder;
  try {
    mkdirSync(folder, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return undefined;
  }
  return privateFolder(folder, uid) ? folder : undefined;
}

/** The sockets in this user's socket folder `folder` (every build's and version's server), as paths. */
export function socketsIn(folder: string): string[] {
  try {
    return readdirSync(folder)
      .filter((name) => name.endsWith('.sock'))
      .sort()
      .map((name) => path.join(folder, name));
  } catch {
    return [];
  }
}

/**
 * 20 hex digits naming `text`: three 32-bit FNV-1a lanes with different seeds. Not a
 * cryptographic hash, and it need not be one: the socket folder is the user's own (no one else can
 * place a socket there), so the name only has to keep builds apart; and loading
 * `node:crypto` cost the client about 2.5 ms of every command's start.
 */
export function socketKey(text: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  let c = 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x01000193) ^ (b >>> 13);
    c = Math.imul((c ^ code) + i, 0x85ebca6b);
  }
  const hex = (n: number): string => (n >>> 0).toString(16).padStart(8, '0');
  return `${hex(a)}${hex(b)}${hex(c)}`.slice(0, 20);
}

/**
 * The identity of the build `mainFile` is: its path, device, inode, size and modification time.
 * A rebuilt or upgraded turnback has another, so it never talks to an old server.
 */
export function buildIdentity(mainFile: string): string | undefined {
  try {
    const stats = statSync(mainFile);
    return `${mainFile}\0${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  } catch {
    return undefined;
  }
}

/**
 * The server address for the command file `mainFile`, for a client with environment `env`, or
 * `undefined` when no server can be used. One server per user and build: the socket's name is a
 * hash of the protocol version, the build ({@link buildIdentity}) and the time zone — the one part
 * of the environment a served command cannot be given per request, because V8 reads TZ from the
 * C environment at start (unset and empty are different zones to the C library). Everything
 * else of the environment travels with each request (environment.ts, request-env.ts).
 */
export function serverAddress(mainFile: string, env: NodeJS.ProcessEnv): ServerAddress | undefined {
  if (env[SERVER_SWITCH] === 'off') return undefined;
  const build = buildIdentity(mainFile);
  if (build === undefined) return undefined;
  const folder = socketFolder(env);
  if (folder === undefined) return undefined;
  const zone = env.TZ === undefined ? 'TZ unset' : `TZ=${env.TZ}`;
  const key = socketKey(`${PROTOCOL_VERSION}\0${build}\0${zone}`);
  const socket = path.join(folder, `${key}.sock`);
  // A socket path longer than the system's limit (about 107 bytes) cannot be bound.
  if (Buffer.byteLength(socket) > 100) return undefined;
  return { socket, mainFile };
}

/**
 * What stands at the socket path when it is not a socket (`a folder`, `a file`, `a symbolic
 * link`), else `undefined`. No server can listen there, and none removes it (it is not a dead
 * server's socket): commands run in their own process until a person removes it.
 */
export function socketBlocker(socket: string): string | undefined {
  try {
    const stats = lstatSync(socket);
    if (stats.isSocket()) return undefined;
    return stats.isDirectory() ? 'a folder' : stats.isSymbolicLink() ? 'a symbolic link' : 'a file';
  } catch {
    return undefined;
  }
}

/** The line that says what blocks the server (the caller escapes the path for a person). */
export function blockedLine(socket: string, what: string): string {
  return `${socket} is ${what}, not the command server's socket: commands run in their own process until it is removed`;
}

/**
 * True the first time a blocked socket path is reported (a marker beside it), so a person is told
 * once, not on every hook; `serverListening` clears it, so a block that comes back is told again.
 */
export function firstReportOfBlock(socket: string): boolean {
  try {
    writeFileSync(`${socket}.blocked`, '', { flag: 'wx', mode: 0o600 });
    return true;
  } catch {
    return false;
  }
}

/** Forgets that a block at `socket` was reported: a server listens there now. */
export function serverListening(socket: string): void {
  rmSync(`${socket}.blocked`, { force: true });
}
