import * as path from 'node:path';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';
import { blockedLine, serverAddress, SERVER_SWITCH, socketBlocker, socketFolder, socketsIn, type ServerAddress } from '../server/address.js';
import { shownPath, shownText } from '../report/escape.js';
import { askServer, launchServer } from '../server/launch.js';
import type { IdleCopyState } from '../server/frames.js';
import { sizeText } from '../report/size-text.js';
import type { Readable } from 'node:stream';

/** One server in this user's socket folder, as it describes itself (`null`: it did not say: an older turnback, or nobody answers). */
export interface ServerEntry {
  socket: string;
  /** The server of the turnback that runs this command (its build and time zone). */
  thisBuild: boolean;
  /** False for a socket file nobody answers (a killed server's). */
  answering: boolean;
  pid: number | null;
  /** Its protocol; an older turnback's server says less about itself. */
  protocol: number | null;
  version: string | null;
  mainFile: string | null;
  startedAt: string | null;
  served: number | null;
  /** Commands it is serving now. */
  active: number | null;
  /** Since when it has had nothing to do; `null` while it serves (or when it did not say). */
  idleSince: string | null;
  /** The idle time after which it leaves. */
  idleSeconds: number | null;
  /** Resident memory, bytes. */
  rss: number | null;
  /** The TZ it serves (`null`: unset, or it did not say). */
  tz: string | null;
  /** What its idle copier is doing: looks, copies pending and done, the next rescan (`null`: it did not say). */
  idleCopies: IdleCopyState | null;
}

/** The `--json` document of `turnback server`. */
export interface ServerJson {
  /** Whether this turnback can use a server here at all. */
  available: boolean;
  /** Whether this build's server answers (the fields below up to `served` are its). */
  running: boolean;
  socket: string | null;
  pid: number | null;
  startedAt: string | null;
  served: number | null;
  /** Why no server can be used here, or why this build's cannot listen. */
  reason?: string;
  /** This user's socket folder (`null`: none usable). */
  folder: string | null;
  /** Every server in it: every build and version of turnback this user runs. */
  servers: ServerEntry[];
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);
const count = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);

/** The idle copier's state as a server said it, when it has the shape this build knows. */
function idleCopiesOf(value: unknown): IdleCopyState | null {
  if (typeof value !== 'object' || value === null) return null;
  const state = value as Partial<Record<keyof IdleCopyState, unknown>>;
  const numbers = [state.pending, state.looks, state.copied, state.bytes, state.settled];
  if (typeof state.running !== 'boolean' || !numbers.every((n) => count(n) !== null)) return null;
  if (state.nextRescan !== null && typeof state.nextRescan !== 'string') return null;
  const look = state.lastLook as Partial<Record<string, unknown>> | null | undefined;
  if (look !== null && (typeof look !== 'object' || typeof look.at !== 'string' || typeof look.storeRoot !== 'string' || ![look.copied, look.bytes, look.left, look.lost].every((n) => count(n) !== null))) return null;
  return value as IdleCopyState;
}

/** The address of the server of this build (dist/cli/main.cjs beside this file). */
function address(): ServerAddress | undefined {
  return serverAddress(path.join(__dirname, 'main.cjs'), process.env);
}

/** What the server at `socket` says about itself. */
async function entryOf(socket: string, own: string | undefined): Promise<ServerEntry> {
  const pong = await askServer(socket, { t: 'ping' });
  return {
    socket,
    thisBuild: socket === own,
    answering: pong !== undefined,
    pid: count(pong?.pid),
    protocol: count(pong?.protocol),
    version: text(pong?.version),
    mainFile: text(pong?.mainFile),
    startedAt: text(pong?.startedAt),
    served: count(pong?.served),
    active: count(pong?.active),
    idleSince: text(pong?.idleSince),
    idleSeconds: count(pong?.idleSeconds),
    rss: count(pong?.rss),
    tz: text(pong?.tz),
    idleCopies: idleCopiesOf(pong?.idleCopies),
  };
}

async function describe(where: ServerAddress | undefined): Promise<ServerJson> {
  const folder = process.env[SERVER_SWITCH] === 'off' ? undefined : socketFolder(process.env);
  const sockets = folder === undefined ? [] : socketsIn(folder);
  if (where !== undefined && !sockets.includes(where.socket)) sockets.push(where.socket);
  const entries = await Promise.all(sockets.map((socket) => entryOf(socket, where?.socket)));
  const own = entries.find((entry) => entry.thisBuild);
  // This build's socket when nothing answers is said on the first line; a path something else blocks is not a server.
  const servers = entries.filter((entry) => entry.answering || (!entry.thisBuild && socketBlocker(entry.socket) === undefined));
  const base = { folder: folder ?? null, servers };
  if (where === undefined) {
    const reason = process.env[SERVER_SWITCH] === 'off' ? `${SERVER_SWITCH}=off` : 'no private socket folder here (see CHECKPOINT-DESIGN.md, The command server)';
    return { available: false, running: false, socket: null, pid: null, startedAt: null, served: null, reason, ...base };
  }
  if (own === undefined || !own.answering) {
    const blocker = socketBlocker(where.socket);
    return { available: true, running: false, socket: where.socket, pid: null, startedAt: null, served: null, ...(blocker !== undefined ? { reason: blockedLine(where.socket, blocker) } : {}), ...base };
  }
  return { available: true, running: true, socket: where.socket, pid: own.pid, startedAt: own.startedAt, served: own.served, ...base };
}

/** `42 s`, `3 min`, `2 h 5 min`. */
function duration(seconds: number): string {
  if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** `1 store` / `2 stores`. */
function stores(n: number): string {
  return `${n} store${n === 1 ? '' : 's'}`;
}

/** The idle copier's line: what it copied, its last look, what waits, when a settled store is looked at again. */
function idleCopiesLine(state: IdleCopyState): string {
  const parts = [state.running ? 'copying now' : state.looks === 0 ? 'no look yet' : `${state.looks} look${state.looks === 1 ? '' : 's'}, ${state.copied} blob${state.copied === 1 ? '' : 's'} copied in (${sizeText(state.bytes)})`];
  const look = state.lastLook;
  if (look !== null) {
    const found =
      look.failed !== undefined
        ? `failed (${shownText(look.failed)})`
        : `${look.copied} copied, ${look.left - look.lost} left on git${look.lost > 0 ? `, ${look.lost} lost to git` : ''}${look.stopped ? ', stopped for a command' : ''}`;
    parts.push(`last look ${shownText(look.at)} at ${shownPath(look.storeRoot)}: ${found}`);
  }
  parts.push(state.pending === 0 ? 'nothing waiting' : `${stores(state.pending)} waiting for the next idle moment`);
  if (state.nextRescan !== null) parts.push(`${stores(state.settled)} settled, looked at again from ${shownText(state.nextRescan)}`);
  return `    idle copies: ${parts.join('; ')}`;
}

/** One server's line: pid, version and build, start, idle time, commands, memory. */
function entryLine(entry: ServerEntry, now: number): string {
  if (!entry.answering) return `  ${shownPath(entry.socket)}: nobody answers (left by a server that was killed; the next server there removes it)`;
  const parts = [`pid ${entry.pid ?? '?'}`];
  if (entry.protocol === null) parts.push('an older turnback');
  else parts.push(`turnback ${shownText(entry.version ?? '(version unknown)')}`);
  if (entry.thisBuild) parts.push('this build');
  if (entry.startedAt !== null) parts.push(`since ${shownText(entry.startedAt)}`);
  // An older server counts connections as active, the asking one included: said only by ours.
  if (entry.protocol !== null && entry.active !== null && entry.active > 0) parts.push(`serving ${entry.active} now`);
  else if (entry.idleSince !== null) {
    const idle = (now - Date.parse(entry.idleSince)) / 1000;
    parts.push(`idle ${duration(idle)}${entry.idleSeconds !== null ? ` (leaves after ${duration(entry.idleSeconds)})` : ''}`);
  }
  if (entry.served !== null) parts.push(`${entry.served} commands served`);
  if (entry.rss !== null) parts.push(`${(entry.rss / (1024 * 1024)).toFixed(0)} MiB`);
  if (entry.tz !== null) parts.push(`TZ=${shownText(entry.tz)}`);
  const where = entry.mainFile !== null ? `\n    ${shownPath(entry.mainFile)}` : entry.protocol === null ? `\n    ${shownPath(entry.socket)}` : '';
  return `  ${parts.join(', ')}${where}${entry.idleCopies !== null ? `\n${idleCopiesLine(entry.idleCopies)}` : ''}`;
}

function print(io: Io, state: ServerJson): void {
  io.emit(state);
  if (!state.available) io.out(`server: not used here (${shownText(state.reason ?? 'unavailable')}); every command runs in its own process`);
  else if (!state.running) io.out(state.reason !== undefined ? `server: not running: ${shownText(state.reason)}` : 'server: not running (the next command starts one)');
  else io.out(`server: running, pid ${state.pid} since ${shownText(state.startedAt ?? '')}, ${state.served} commands served`, `socket: ${shownPath(state.socket ?? '')}`);
  if (state.servers.length === 0) return;
  const now = Date.now();
  io.out(`servers of this user (${state.servers.length}, in ${shownPath(state.folder ?? '')}):`);
  for (const entry of state.servers) io.out(entryLine(entry, now));
}

/** Waits for the started server's `ready` line (or its end). */
function readyLine(stdout: Readable | null): Promise<boolean> {
  return new Promise((resolve) => {
    if (stdout === null) return resolve(false);
    let seen = '';
    stdout.setEncoding('utf8');
    stdout.on('data', (chunk: string) => {
      seen += chunk;
      if (seen.includes('ready\n')) {
        stdout.destroy();
        resolve(true);
      }
    });
    stdout.on('close', () => resolve(seen.includes('ready\n')));
  });
}

/**
 * Starts the server at `where` and waits until it listens. A server started at the same moment by
 * another client may take the socket first (ours then leaves without `ready`): that one serves.
 */
async function startAndWait(where: ServerAddress): Promise<boolean> {
  const child = launchServer(where, process.env, 'pipe');
  if (await readyLine(child.stdout)) return true;
  return (await describe(where)).running;
}

/**
 * Makes sure a server of this build listens (started and waited for when none does): what
 * `hooks install` needs before it writes HTTP hooks, whose port the server picks. False when no
 * server can run here.
 */
export async function serverRunning(): Promise<boolean> {
  const where = address();
  if (where === undefined) return false;
  const state = await describe(where);
  if (state.running) return true;
  if (state.reason !== undefined) return false;
  return startAndWait(where);
}

/**
 * `turnback server [status|start|stop] [--all]`: this user's command servers. `status` lists
 * every one (every build and version in the socket folder); `start` starts this build's and
 * returns once it listens (scripts and tests need no waiting loop); `stop` ends this build's, and
 * `stop --all` every one (a command one is serving finishes first).
 */
export async function serverCommand(action: string | undefined, io: Io, options: { all?: boolean } = {}): Promise<number> {
  const where = address();
  const chosen = action ?? 'status';
  if (options.all === true && chosen !== 'stop') throw new CliExit(EXIT.usage, 'USAGE', '--all goes with stop only');
  switch (chosen) {
    case 'status':
      print(io, await describe(where));
      return EXIT.ok;
    case 'start': {
      const state = await describe(where);
      if (where === undefined || state.running) {
        print(io, state);
        return state.available ? EXIT.ok : EXIT.error;
      }
      if (state.reason !== undefined) throw new CliExit(EXIT.error, 'SERVER_FAILED', `the server cannot start: ${state.reason}`);
      if (!(await startAndWait(where))) throw new CliExit(EXIT.error, 'SERVER_FAILED', 'the server did not start');
      print(io, await describe(where));
      return EXIT.ok;
    }
    case 'stop': {
      const state = await describe(where);
      const targets = state.servers.filter((entry) => entry.answering && (options.all === true || entry.thisBuild));
      await Promise.all(targets.map((entry) => askServer(entry.socket, { t: 'stop' })));
      const stopped = new Set(targets.map((entry) => entry.socket));
      io.emit({ ...state, running: state.running && !stopped.has(state.socket ?? ''), stopped: targets.map((entry) => ({ socket: entry.socket, pid: entry.pid })), servers: state.servers.filter((entry) => !stopped.has(entry.socket)) });
      if (options.all !== true) io.out(state.running ? `server: stopped (pid ${state.pid})` : 'server: not running');
      else io.out(targets.length === 0 ? 'server: none running' : `server: stopped ${targets.length} (pid ${targets.map((entry) => entry.pid ?? '?').join(', ')})`);
      return EXIT.ok;
    }
    default:
      throw new CliExit(EXIT.usage, 'USAGE', `server takes status, start or stop, not ${action}`);
  }
}
