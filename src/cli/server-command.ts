import * as path from 'node:path';
import { EXIT } from './exit-codes.js';
import { CliExit, type Io } from './io.js';
import { blockedLine, serverAddress, SERVER_SWITCH, socketBlocker, type ServerAddress } from '../server/address.js';
import { shownText } from '../report/escape.js';
import { askServer, launchServer } from '../server/launch.js';
import type { Readable } from 'node:stream';

/** The `--json` document of `turnback server`. */
export interface ServerJson {
  available: boolean;
  running: boolean;
  socket: string | null;
  pid: number | null;
  startedAt: string | null;
  served: number | null;
  /** Why no server can be used here. */
  reason?: string;
}

/** The address of the server of this build and environment (dist/cli/main.cjs beside this file). */
function address(): ServerAddress | undefined {
  return serverAddress(path.join(__dirname, 'main.cjs'), process.env);
}

async function describe(where: ServerAddress | undefined): Promise<ServerJson> {
  if (where === undefined) {
    const reason = process.env[SERVER_SWITCH] === 'off' ? `${SERVER_SWITCH}=off` : 'no private socket folder here (see CHECKPOINT-DESIGN.md, The command server)';
    return { available: false, running: false, socket: null, pid: null, startedAt: null, served: null, reason };
  }
  const pong = await askServer(where.socket, { t: 'ping' });
  if (pong === undefined) {
    const blocker = socketBlocker(where.socket);
    return { available: true, running: false, socket: where.socket, pid: null, startedAt: null, served: null, ...(blocker !== undefined ? { reason: blockedLine(where.socket, blocker) } : {}) };
  }
  return { available: true, running: true, socket: where.socket, pid: Number(pong.pid), startedAt: String(pong.startedAt), served: Number(pong.served) };
}

function print(io: Io, state: ServerJson): void {
  io.emit(state);
  if (!state.available) io.out(`server: not used here (${state.reason ?? 'unavailable'}); every command runs in its own process`);
  else if (!state.running) io.out(state.reason !== undefined ? `server: not running: ${shownText(state.reason)}` : 'server: not running (the next command starts one)');
  else io.out(`server: running, pid ${state.pid} since ${state.startedAt}, ${state.served} commands served`, `socket: ${state.socket}`);
}

/** Waits for the started server's `ready` line (or its end). */
function readyLine(stdout: Readable | null): Promise<boolean> {
  return new Promise((resolve) => {
    if (stdout === null) return resolve(false);
    let text = '';
    stdout.setEncoding('utf8');
    stdout.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('ready\n')) {
        stdout.destroy();
        resolve(true);
      }
    });
    stdout.on('close', () => resolve(text.includes('ready\n')));
  });
}

/** Starts the server at `where` and waits until it listens. */
async function startAndWait(where: ServerAddress): Promise<boolean> {
  const child = launchServer(where, process.env, 'pipe');
  return readyLine(child.stdout);
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
 * `turnback server [status|start|stop]`: the per-user command server of this build and
 * environment. `start` returns once it listens (scripts and tests need no waiting loop); `stop`
 * ends it (a command it is serving finishes first).
 */
export async function serverCommand(action: string | undefined, io: Io): Promise<number> {
  const where = address();
  switch (action ?? 'status') {
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
      if (where !== undefined && state.running) await askServer(where.socket, { t: 'stop' });
      io.emit({ ...state, running: false });
      io.out(state.running ? `server: stopped (pid ${state.pid})` : 'server: not running');
      return EXIT.ok;
    }
    default:
      throw new CliExit(EXIT.usage, 'USAGE', `server takes status, start or stop, not ${action}`);
  }
}
