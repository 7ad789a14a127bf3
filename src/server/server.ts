import { unlinkSync, writeSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { readFrames, sendFrame, type ServerFrame, type TerminalShape } from './frames.js';
import { INTERRUPTS, type ChildEnd, type ProcessSeam } from './seam.js';
import { PROTOCOL_VERSION, SERVED_COMMANDS, serverListening } from './address.js';
import { warmStatHelper } from '../admin.js';
import { startHookListener } from './hook-listener.js';

// The per-user command server. A fresh `turnback` process pays Node's start, the load of the whole
// command and a cold JIT on every command; a person's shell and every agent hook start one per
// command. The server is `main.cjs` started once (by the first command that finds none), which
// then runs commands for the small client (`dist/cli/turnback.cjs`): the client sends its argv,
// folder, pid and terminal shapes; the server runs the very same command code against a process
// seam (src/server/seam.ts) whose output goes back as frames, and asks the client to start `run`'s
// command, so the terminal, the signals and the command's environment stay the person's. Nothing is cached
// between commands that a fresh process would not read again: every command opens its store and
// every picture `lstat`s every file, so a served command sees exactly what an in-process one sees.
// It leaves after an idle time (TURNBACK_SERVER_IDLE_SECONDS, default 600).

/** Runs one command line on a served process seam and returns its exit code (main.ts's `execute`). */
export type Executor = (argv: readonly string[], seam: ProcessSeam) => Promise<number>;

/** Raised in a served command when its client went away (killed, or its terminal closed). */
export class ClientGone extends Error {
  constructor() {
    super('the turnback process that asked for this command is gone');
    this.name = 'ClientGone';
  }
}

const DEFAULT_IDLE_SECONDS = 600;

/** Seconds of no connection after which the server leaves: TURNBACK_SERVER_IDLE_SECONDS (1–86400), else 600. */
export function idleSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.TURNBACK_SERVER_IDLE_SECONDS;
  if (text === undefined || !/^[1-9][0-9]{0,4}$/.test(text) || Number(text) > 86_400) return DEFAULT_IDLE_SECONDS;
  return Number(text);
}

/** The request frame, checked: anything else ends the connection. */
interface Request {
  argv: string[];
  cwd: string;
  pid: number;
  stdout: TerminalShape;
  stderr: TerminalShape;
  startedAt?: number;
  input?: string;
  inputGap?: string;
}

function terminalShape(value: unknown): TerminalShape | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { tty, columns } = value as Record<string, unknown>;
  if (typeof tty !== 'boolean') return undefined;
  if (columns !== undefined && (!Number.isSafeInteger(columns) || (columns as number) < 1)) return undefined;
  return columns === undefined ? { tty } : { tty, columns: columns as number };
}

function requestOf(frame: Record<string, unknown>): Request | undefined {
  const { argv, cwd, pid } = frame;
  if (!Array.isArray(argv) || argv.length < 3 || argv.length > 100_000 || !argv.every((a) => typeof a === 'string')) return undefined;
  if (!SERVED_COMMANDS.has(argv[2] as string)) return undefined;
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd)) return undefined;
  if (!Number.isSafeInteger(pid) || (pid as number) <= 0) return undefined;
  const stdout = terminalShape(frame.stdout);
  const stderr = terminalShape(frame.stderr);
  if (stdout === undefined || stderr === undefined) return undefined;
  if (frame.input !== undefined && typeof frame.input !== 'string') return undefined;
  if (frame.inputGap !== undefined && typeof frame.inputGap !== 'string') return undefined;
  if (frame.startedAt !== undefined && !Number.isSafeInteger(frame.startedAt)) return undefined;
  return {
    argv: argv as string[],
    cwd,
    pid: pid as number,
    stdout,
    stderr,
    ...(typeof frame.startedAt === 'number' ? { startedAt: frame.startedAt } : {}),
    ...(typeof frame.input === 'string' ? { input: frame.input } : {}),
    ...(typeof frame.inputGap === 'string' ? { inputGap: frame.inputGap } : {}),
  };
}

/**
 * Listens on `socketPath` and serves commands with `execute` until idle or stopped; resolves when
 * the server has closed. Writes `ready` on stdout once listening (what `turnback server start`
 * waits for). Leaves at once, quietly, when another live server already listens there.
 */
export async function serveForever(socketPath: string, execute: Executor): Promise<void> {
  const startedAt = new Date().toISOString();
  const idleMs = idleSeconds() * 1000;
  let served = 0;
  let active = 0;
  let idleTimer: NodeJS.Timeout | undefined;
  const server = net.createServer();
  const closed = new Promise<void>((resolve) => server.once('close', resolve));

  const stop = (): void => {
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    // Stops listening at once (the socket file goes); commands being served finish first.
    server.close();
  };
  const armIdle = (): void => {
    if (idleTimer !== undefined) clearTimeout(idleTimer);
    idleTimer = active === 0 ? setTimeout(stop, idleMs) : undefined;
  };

  server.on('connection', (socket) => {
    active++;
    armIdle();
    let request: Request | undefined;
    let gone = false;
    const interruptListeners = new Set<(signal: NodeJS.Signals) => void>();
    let child: { resolve: (end: ChildEnd) => void; reject: (error: Error) => void } | undefined;
    const send = (frame: ServerFrame): void => sendFrame(socket, frame);
    socket.on('error', () => undefined);
    socket.once('close', () => {
      gone = true;
      active--;
      armIdle();
      child?.reject(new ClientGone());
      child = undefined;
      // The person's process vanished: as a closed terminal would, it interrupts the command.
      for (const listener of [...interruptListeners]) listener('SIGHUP');
    });
    send({ t: 'hello', protocol: PROTOCOL_VERSION, pid: process.pid });
    readFrames(socket, (frame) => {
      switch (frame.t) {
        case 'ping':
          send({ t: 'pong', pid: process.pid, startedAt, served, active });
          socket.end();
          return;
        case 'stop':
          send({ t: 'exit', code: 0 });
          socket.end();
          stop();
          return;
        case 'signal':
          if (typeof frame.signal === 'string' && (INTERRUPTS as readonly string[]).includes(frame.signal)) {
            for (const listener of [...interruptListeners]) listener(frame.signal as NodeJS.Signals);
          }
          return;
        case 'child': {
          const waiting = child;
          child = undefined;
          if (waiting === undefined || !Number.isSafeInteger(frame.code)) return;
          waiting.resolve({
            code: frame.code as number,
            signal: typeof frame.signal === 'string' ? (frame.signal as NodeJS.Signals) : undefined,
            ...(typeof frame.spawnError === 'string' ? { spawnError: frame.spawnError } : {}),
          });
          return;
        }
        case 'request': {
          if (request !== undefined) return;
          request = requestOf(frame);
          if (request === undefined) {
            socket.destroy();
            return;
          }
          served++;
          // Alive and on it: a client whose server froze after its hello learns it from this frame's absence.
          send({ t: 'taken' });
          const shape = request;
          const seam: ProcessSeam = {
            cwd: shape.cwd,
            pid: shape.pid,
            ...(shape.input !== undefined ? { input: shape.input } : {}),
            ...(shape.inputGap !== undefined ? { inputGap: shape.inputGap } : {}),
            ...(shape.startedAt !== undefined ? { startedAt: shape.startedAt } : {}),
            accept(promise) {
              // A client that gave up waiting runs the hook itself: this one must then change nothing.
              if (gone) return false;
              send({ t: 'accepted', deadline: promise.deadline, log: promise.log });
              return true;
            },
            stdout: { write: (text) => send({ t: 'out', text }), isTTY: shape.stdout.tty, ...(shape.stdout.columns !== undefined ? { columns: shape.stdout.columns } : {}) },
            stderr: { write: (text) => send({ t: 'err', text }), isTTY: shape.stderr.tty, ...(shape.stderr.columns !== undefined ? { columns: shape.stderr.columns } : {}) },
            onInterrupt(listener) {
              interruptListeners.add(listener);
              return () => interruptListeners.delete(listener);
            },
            runChild(argv, sessionId) {
              if (gone) return Promise.reject(new ClientGone());
              return new Promise<ChildEnd>((resolve, reject) => {
                child = { resolve, reject };
                send({ t: 'spawn', argv: [...argv], sessionId });
              });
            },
          };
          execute(shape.argv, seam)
            .catch((error: unknown) => {
              send({ t: 'err', text: `turnback: ${error instanceof Error ? error.message : String(error)}\n` });
              return 1;
            })
            .then((code) => {
              send({ t: 'exit', code });
              socket.end();
            });
          return;
        }
        default:
          socket.destroy();
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    const listen = (retry: boolean): void => {
      server.once('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'EADDRINUSE' || !retry) return reject(error);
        // Someone's socket is there: a live server keeps it; a dead one's file is removed.
        const probe = net.connect(socketPath);
        probe.once('connect', () => {
          probe.destroy();
          reject(Object.assign(new Error('another server listens there'), { code: 'EADDRINUSE' }));
        });
        probe.once('error', () => {
          try {
            unlinkSync(socketPath);
          } catch {
            // Gone already.
          }
          listen(false);
        });
      });
      server.listen(socketPath, () => resolve());
    };
    listen(true);
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'EADDRINUSE') return;
    throw error;
  });
  if (!server.listening) return;
  serverListening(socketPath);
  // Agents' HTTP hooks (hook-listener.ts): each request is work, as a connection is.
  const hooks = await startHookListener(
    {
      execute,
      busy() {
        active++;
        armIdle();
        let ended = false;
        return () => {
          if (ended) return;
          ended = true;
          active--;
          armIdle();
        };
      },
    },
    socketPath,
  );
  void closed.then(() => hooks?.close());
  // Every picture a served command takes is the first of its observer: the helper would never warm on its own.
  warmStatHelper();
  try {
    writeSync(1, 'ready\n');
  } catch {
    // Nobody waits for it.
  }
  armIdle();
  // Told to end (`kill`, a shutdown): the socket file goes with it, and so does the server; a
  // client waiting on a command says so and keeps its own command's exit code.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      stop();
      process.exit(0);
    });
  }
  await closed;
}
