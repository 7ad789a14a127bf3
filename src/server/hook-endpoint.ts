import { randomBytes } from 'node:crypto';
import { closeSync, constants, type BigIntStats, fstatSync, lstatSync, mkdirSync, openSync, readSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { homeFolder } from '../core/home.js';

// Where agents' HTTP hooks reach the server (issue #28): 127.0.0.1, a port, and a per-user
// secret every request must carry. Both live in one owner-only file of the user's state folder
// (`$XDG_STATE_HOME/turnback/hook-endpoint.json`, else `~/.local/state/turnback/`), never in a
// project: the secret is random (32 bytes), made once and kept, since the hook files that carry it
// outlive any one server; the port is the one the server listens on, kept so that the next server
// takes the same one and the installed hooks keep reaching it.

/** The port and secret an agent's HTTP hook uses. */
export interface HookEndpoint {
  /** 0: no server has listened yet. */
  port: number;
  /** 64 hex digits. */
  secret: string;
}

/** The longest file read: a port and a secret are some hundred bytes. */
const MAX_FILE_BYTES = 4096;

/**
 * The user's folder for turnback's state (`$XDG_STATE_HOME/turnback`, else
 * `~/.local/state/turnback`), created owner-only; `undefined` where it cannot be made safe: not a
 * folder, a link, another owner's, open to others, or no user ids (Windows).
 */
export function stateFolder(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  const base = env.XDG_STATE_HOME !== undefined && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(homeFolder(env), '.local', 'state');
  const folder = path.join(base, 'turnback');
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const stats = lstatSync(folder);
    if (!stats.isDirectory() || stats.uid !== uid || (stats.mode & 0o077) !== 0) return undefined;
  } catch {
    return undefined;
  }
  return folder;
}

/** The endpoint file in `folder`. */
export function endpointFile(folder: string): string {
  return path.join(folder, 'hook-endpoint.json');
}

function parsed(text: string): HookEndpoint | undefined {
  try {
    const value = JSON.parse(text) as { port?: unknown; secret?: unknown };
    if (!Number.isSafeInteger(value.port) || (value.port as number) < 0 || (value.port as number) > 65_535) return undefined;
    if (typeof value.secret !== 'string' || !/^[0-9a-f]{64}$/.test(value.secret)) return undefined;
    return { port: value.port as number, secret: value.secret };
  } catch {
    return undefined;
  }
}

/**
 * The endpoint recorded in `folder`, or `undefined` when there is none or it cannot be trusted:
 * read without following a link, only from a regular file of this user that no one else can read
 * or write.
 */
export function readEndpoint(folder: string): HookEndpoint | undefined {
  return readWithIdentity(folder).endpoint;
}

/** A file's identity as an fstat or lstat sees it: replacing it (rename), rewriting it, chmod or chown each change it. */
function identityOf(stats: BigIntStats): string {
  return `${stats.dev}:${stats.ino}:${stats.mode}:${stats.uid}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

/**
 * A file changed this recently is read again each time: file systems stamp times coarsely (ext4
 * to the kernel's tick), so a rewrite in place at the same size right after a read could keep
 * every field of the identity (git's "racily clean" files, handled the same way).
 */
const RACY_MS = 2000;

/** {@link readEndpoint}, with the identity of the file it was read from (its own descriptor's). */
function readWithIdentity(folder: string): { endpoint: HookEndpoint | undefined; identity?: string; changedMs?: number } {
  let fd: number;
  try {
    fd = openSync(endpointFile(folder), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return { endpoint: undefined };
  }
  try {
    const stats = fstatSync(fd, { bigint: true });
    const identity = identityOf(stats);
    const changedMs = Number((stats.mtimeNs > stats.ctimeNs ? stats.mtimeNs : stats.ctimeNs) / 1_000_000n);
    if (!stats.isFile() || Number(stats.uid) !== process.getuid?.() || (Number(stats.mode) & 0o077) !== 0 || stats.size > BigInt(MAX_FILE_BYTES)) return { endpoint: undefined, identity, changedMs };
    const buffer = Buffer.alloc(Math.max(1, Number(stats.size)));
    const read = readSync(fd, buffer, 0, buffer.length, 0);
    return { endpoint: parsed(buffer.subarray(0, read).toString('utf8')), identity, changedMs };
  } catch {
    return { endpoint: undefined };
  } finally {
    closeSync(fd);
  }
}

/**
 * The endpoint of `folder` as each hook request checks its secret against (issue #28): read again
 * only when the file's identity (an `lstat`: device, inode, mode, owner, size, mtime and ctime)
 * is not the one it was last read from, or when it changed within the last 2 s; so a secret made
 * again, a file replaced, rewritten, chmodded or turned into a link takes effect at the next
 * request, as a read per request did, for one system call instead of four.
 */
export class EndpointReader {
  private last: { identity: string; endpoint: HookEndpoint | undefined } | undefined;

  /** `now`: the clock the racy window is measured on (a test's own). */
  constructor(
    private readonly folder: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The endpoint as the file has it now; `undefined` when there is none or it cannot be trusted. */
  read(): HookEndpoint | undefined {
    let now: string;
    try {
      now = identityOf(lstatSync(endpointFile(this.folder), { bigint: true }));
    } catch {
      this.last = undefined;
      return undefined;
    }
    if (this.last !== undefined && this.last.identity === now) return this.last.endpoint;
    const { endpoint, identity, changedMs } = readWithIdentity(this.folder);
    // Kept under the identity of what was read (a file replaced between the lstat and the open
    // differs next time and is read again), unless it changed within the racy window.
    this.last = identity === undefined || changedMs === undefined || this.now() - changedMs < RACY_MS ? undefined : { identity, endpoint };
    return endpoint;
  }
}

/** Writes `endpoint` to `folder`, owner-only, atomically (a new file renamed over the old). */
export function writeEndpoint(folder: string, endpoint: HookEndpoint): void {
  const file = endpointFile(folder);
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(endpoint)}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(temporary, file);
}

/**
 * The endpoint of `folder`, made when there is none (a new secret, no port yet). A file that is
 * there but cannot be trusted (another owner, readable by others, not ours) is replaced: the
 * hooks that carried its secret must be installed again.
 */
export function ensureEndpoint(folder: string): HookEndpoint {
  const found = readEndpoint(folder);
  if (found !== undefined) return found;
  const made = { port: 0, secret: randomBytes(32).toString('hex') };
  writeEndpoint(folder, made);
  return made;
}

/** Where the server that listens for hooks records its port beside its socket (owner-only), for `server status`. */
export function portRecord(socket: string): string {
  return `${socket}.port`;
}
