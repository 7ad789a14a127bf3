import { readFileSync, writeSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { serverListening } from './address.js';
import { serveConnection, type Executor } from './connection.js';
import { idleSeconds, ServerLife, type ServerIdentity } from './life.js';
import { listenOnSocket } from './listen.js';
import { installRequestEnvironment } from './request-env.js';
import { warmStatHelper } from '../admin.js';
import { watchingService } from './watching.js';
import { startIdleCopies } from './idle-copies.js';
import { startHookListener } from './hook-listener.js';

export { ClientGone, type Executor } from './connection.js';

// The per-user command server. A fresh `turnback` process pays Node's start, the load of the whole
// command and a cold JIT on every command; a person's shell and every agent hook start one per
// command. The server is `main.cjs` started once per user and build (by the first command that
// finds none), which then runs commands for the small client (`dist/cli/turnback.cjs`): the
// client sends its argv, folder, pid, terminal shapes and environment; the server runs the very
// same command code against a process seam (src/server/seam.ts) whose output goes back as
// frames, with the client's environment as `process.env` (request-env.ts), and asks the client to
// start `run`'s command, so the terminal, the signals and the command's environment stay the
// person's. Nothing is cached between commands that a fresh process would not read again: every
// command opens its store and every picture `lstat`s every file, so a served command sees
// exactly what an in-process one sees. It leaves after an idle time (life.ts).
//
// The command socket is the server's first listener. Everything else it runs — another listener
// (agents' HTTP hooks), a service (a file watcher) — is one entry of SERVICES: started once the
// command socket listens, given the server's life (its idle clock, its end) and the command code,
// and closed when the server leaves.

/** What a listener or service is given when the server starts it. */
export interface ServiceContext {
  /** The server's counters, idle clock and end: `life.busy()` around work keeps the server from leaving idle. */
  life: ServerLife;
  /** The command code, as the command socket runs it. */
  execute: Executor;
  /** The command socket's path (a service keeps its own files beside it). */
  socketPath: string;
}

/** A listener or service running inside the server, closed (and awaited) when the server leaves. */
export interface ServerService {
  close(): Promise<void>;
}

/** Starts one listener or service. */
export type ServiceStart = (context: ServiceContext) => Promise<ServerService>;

/** The listeners and services beside the command socket, in start order (closed in reverse). */
const SERVICES: readonly ServiceStart[] = [
  watchingService,
  // Copies the git blobs that served projects' checkpoints rest on into their stores, while no command is served.
  ({ life }) => Promise.resolve(startIdleCopies(life)),
  // Agents' HTTP hooks on 127.0.0.1 (hook-listener.ts); none where no secret can be kept.
  async ({ life, execute, socketPath }) => (await startHookListener({ execute, busy: () => life.busy(), idleWorkStopped: () => life.idleWorkStopped() }, socketPath)) ?? { close: () => Promise.resolve() },
];

/** The turnback version of the package `mainFile` belongs to (`…/dist/cli/main.cjs` → `…/package.json`). */
function packageVersion(mainFile: string): string | null {
  try {
    const pkg = JSON.parse(readFileSync(path.join(path.dirname(mainFile), '..', '..', 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
    return pkg.name === 'turnback' && typeof pkg.version === 'string' ? pkg.version : null;
  } catch {
    return null;
  }
}

/** The command socket: each connection served on its own (connection.ts), closed once every one has ended. */
async function commandSocket(socketPath: string, context: ServiceContext): Promise<ServerService | undefined> {
  const server = net.createServer((socket) => serveConnection(socket, context.life, context.execute));
  const closed = new Promise<void>((resolve) => server.once('close', resolve));
  if (!(await listenOnSocket(server, socketPath))) return undefined;
  serverListening(socketPath);
  return {
    close() {
      // Stops listening at once (the socket file goes); commands being served finish first.
      server.close();
      return closed;
    },
  };
}

/**
 * Listens on `socketPath` and serves commands with `execute` until idle or stopped; resolves when
 * the server has closed. Writes `ready` on stdout once listening (what `turnback server start`
 * waits for). Leaves at once, quietly, when another live server already listens there.
 */
export async function serveForever(socketPath: string, execute: Executor): Promise<void> {
  const identity: ServerIdentity = { mainFile: path.resolve(process.argv[1] ?? ''), version: null, tz: process.env.TZ ?? null };
  identity.version = packageVersion(identity.mainFile);
  const life = new ServerLife(idleSeconds() * 1000, identity);
  // Before any command runs: from here on each served command's `process.env` is its client's.
  installRequestEnvironment();
  const context: ServiceContext = { life, execute, socketPath };
  const commands = await commandSocket(socketPath, context);
  if (commands === undefined) return;
  const running: ServerService[] = [commands];
  for (const start of SERVICES) running.push(await start(context));
  // Every picture a served command takes is the first of its observer: the helper would never warm on its own.
  warmStatHelper();
  try {
    writeSync(1, 'ready\n');
  } catch {
    // Nobody waits for it.
  }
  life.start();
  // Told to end (`kill`, a shutdown): the socket file goes with it, and so does the server; a
  // client waiting on a command says so and keeps its own command's exit code.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      life.stop();
      void commands.close();
      process.exit(0);
    });
  }
  await life.leaving;
  for (const service of running.reverse()) await service.close();
}
