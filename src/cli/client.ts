import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { childEnd, HANDED_INPUT, INTERRUPTS, type ChildEnd } from './invocation.js';
import { spawnCommand } from './command-process.js';
import { PROTOCOL_VERSION, SERVED_COMMANDS, serverAddress } from './server-address.js';
import { launchServer } from './server-launch.js';
import { readFrames, sendFrame, type ClientFrame } from './server-frames.js';

// The `turnback` command as a person and an agent hook start it: a small file (a few kilobytes to
// load, against the whole command's ~700) that hands the commands which never ask anything to the
// per-user server (server.ts) and relays its output, signals and `run`'s command; everything else,
// and everything whenever no server answers, runs in this process from `main.cjs`. The first
// command that finds no server starts one in the background and runs in-process itself.

/** The whole command, in this process (handed the stdin this client read already, if it did). */
function inProcess(): void {
  if (input !== undefined) (globalThis as Record<symbol, unknown>)[HANDED_INPUT] = input;
  require(path.join(__dirname, 'main.cjs'));
}

/** How long the server has to say hello before this command runs in-process instead. */
const HELLO_TIMEOUT_MS = 2000;

function terminalShape(stream: NodeJS.WriteStream): { tty: boolean; columns?: number } {
  return stream.isTTY === true && typeof stream.columns === 'number' ? { tty: true, columns: stream.columns } : { tty: stream.isTTY === true };
}

/**
 * An agent hook's payload: all of stdin, read before connecting (the server has no stdin of the
 * client's). Nothing from a terminal; `undefined` when stdin cannot be read, and the command
 * then runs here, where it reads stdin itself.
 */
function readInput(): string | undefined {
  if (process.stdin.isTTY === true) return '';
  try {
    return readFileSync(0, 'utf8');
  } catch {
    return undefined;
  }
}

let input: string | undefined;

function served(address: { socket: string; mainFile: string }): void {
  const socket = net.connect(address.socket);
  const send = (frame: ClientFrame): void => sendFrame(socket, frame);
  // Once the server has said or started anything, running the command again here would do it twice.
  let committed = false;
  let exitCode: number | undefined;
  let child: { end: Promise<ChildEnd>; kill(signal: NodeJS.Signals): void } | undefined;
  const isRun = process.argv[2] === 'run';
  let hello = false;
  let fellBack = false;
  /** Runs the command here instead, once, and only while nothing was said or started. */
  const fallBack = (): void => {
    if (committed) return;
    committed = true;
    fellBack = true;
    clearTimeout(helloTimer);
    if (isRun) for (const signal of INTERRUPTS) process.off(signal, onInterrupt);
    socket.destroy();
    inProcess();
  };
  const helloTimer = setTimeout(fallBack, HELLO_TIMEOUT_MS);

  const onInterrupt = (signal: NodeJS.Signals): void => {
    child?.kill(signal);
    send({ t: 'signal', signal });
  };
  // Only `run` outlives Ctrl-C (it forwards it to its command and still lists what changed);
  // every other command ends on it, as it would in-process.
  if (isRun) for (const signal of INTERRUPTS) process.on(signal, onInterrupt);

  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    // `turnback list | head`: stop quietly.
    if (error.code === 'EPIPE') process.exit(exitCode ?? 0);
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (hello) return;
    // No server yet (or a dead one's socket): start one for the next command.
    if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') launchServer(address, process.env);
    fallBack();
  });
  socket.on('close', () => {
    if (exitCode === undefined && !fellBack) void serverLost();
  });

  const serverLost = async (): Promise<void> => {
    if (!committed) {
      // Nothing was said or started: the command runs here instead, from the start.
      fallBack();
      return;
    }
    if (child !== undefined) {
      const end = await child.end;
      process.stderr.write('turnback: the checkpoint server stopped during this run: no change list (turnback status shows the run)\n');
      process.exitCode = end.code;
      return;
    }
    process.stderr.write('turnback: the checkpoint server stopped before the command finished\n');
    process.exitCode = 1;
  };

  readFrames(socket, (frame) => {
    switch (frame.t) {
      case 'hello':
        clearTimeout(helloTimer);
        if (frame.protocol !== PROTOCOL_VERSION) {
          fallBack();
          return;
        }
        hello = true;
        send({ t: 'request', argv: process.argv, cwd: process.cwd(), pid: process.pid, stdout: terminalShape(process.stdout), stderr: terminalShape(process.stderr), ...(input !== undefined ? { input } : {}) });
        return;
      case 'out':
        committed = true;
        if (typeof frame.text === 'string') process.stdout.write(frame.text);
        return;
      case 'err':
        committed = true;
        if (typeof frame.text === 'string') process.stderr.write(frame.text);
        return;
      case 'spawn': {
        committed = true;
        const argv = frame.argv as string[];
        const started = spawnCommand(argv, String(frame.sessionId));
        const end = childEnd(started, argv[0] as string);
        child = {
          end,
          kill: (signal) => {
            if (started.exitCode === null && started.signalCode === null) started.kill(signal);
          },
        };
        void end.then((result) => {
          send({ t: 'child', code: result.code, signal: result.signal ?? null, ...(result.spawnError !== undefined ? { spawnError: result.spawnError } : {}) });
        });
        return;
      }
      case 'exit':
        exitCode = typeof frame.code === 'number' ? frame.code : 1;
        process.exitCode = exitCode;
        if (isRun) for (const signal of INTERRUPTS) process.off(signal, onInterrupt);
        socket.end();
        return;
      default:
        socket.destroy();
    }
  });
}

const address = SERVED_COMMANDS.has(process.argv[2] ?? '') ? serverAddress(path.join(__dirname, 'main.cjs'), process.env) : undefined;
if (address !== undefined && process.argv[2] === 'hook') input = readInput();
if (address === undefined || (process.argv[2] === 'hook' && input === undefined)) inProcess();
else served(address);
