import { appendFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { isatty } from 'node:tty';
import type { ChildProcess } from 'node:child_process';
import { INTERRUPTS, type ChildEnd } from '../server/seam.js';
import { blockedLine, firstReportOfBlock, PROTOCOL_VERSION, SERVED_COMMANDS, serverAddress, socketBlocker } from '../server/address.js';
import { checkedVariables, relayedVariables } from '../server/environment.js';
import { MAX_LINE, readFrames, sendFrame, type ClientFrame } from '../server/frames.js';
import { LAUNCHED_SERVER } from '../server/watch-hint.js';
import { HANDED_INPUT, HOOK_LEAVE_MS, readHookInput, type HookInput } from './hook-input.js';
import { shownPath, shownText } from '../report/escape.js';

// The `turnback` command as a person and an agent hook start it: a small file (a few kilobytes to
// load, against the whole command's ~700) that hands the commands which never ask anything to the
// per-user server (server.ts) and relays its output, signals and `run`'s command; everything else,
// and everything whenever no server answers, runs in this process from `main.cjs`. The first
// command that finds no server starts one in the background and runs in-process itself.
//
// A hook is the path that runs most (two processes per tool call), so it loads only what a served
// hook needs — `net`, `fs`, `path` and the small frame, address and payload modules; the server's
// launcher and `run`'s child process (`node:child_process`, `node:os`) are imported when they are
// used — and it connects to the server while it reads the agent's payload, so the server's hello
// has come by the time the payload has.

/** The whole command, in this process (handed the stdin this client read already, if it did). */
function inProcess(): void {
  void inputRead.then(() => {
    if (input !== undefined) (globalThis as Record<symbol, unknown>)[HANDED_INPUT] = input;
    require(path.join(__dirname, 'main.cjs'));
  });
}

/** How long the server has to say hello before this command runs in-process instead (a hook: 1 s, its budget is short). */
const HELLO_TIMEOUT_MS = 2000;

/**
 * How long a served hook's server has, once asked, to say it took the request (`taken`) before
 * the hook runs in-process instead: a server that said hello and then froze must not hold the agent.
 */
const TAKEN_TIMEOUT_MS = 1000;

/**
 * How long, from its start, a hook waits for everything before it knows its project and budget
 * (its stdin, the server's hello, `taken` and `accepted` — the server found the project and its
 * budget and changed nothing yet): past it the hook runs in-process, where its budget counts from
 * this process's start all the same.
 */
const BEFORE_BUDGET_MS = 3000;

/** When this process started (epoch ms): a hook's budget counts from there. */
const startedAt = Math.round(performance.timeOrigin);

/**
 * Whether stdout (1) or stderr (2) is a terminal, and its width. Asked of the descriptor: making
 * `process.stdout` costs a stream (milliseconds for a pipe), and a hook's output is mostly nothing.
 */
function terminalShape(fd: 1 | 2): { tty: boolean; columns?: number } {
  if (!isatty(fd)) return { tty: false };
  const stream = fd === 1 ? process.stdout : process.stderr;
  return typeof stream.columns === 'number' ? { tty: true, columns: stream.columns } : { tty: true };
}

/** Writes to stdout; the first write sets up the stream's EPIPE handling (`turnback list | head` stops quietly). */
let stdoutWritten = false;
function writeOut(text: string, exitCode: () => number | undefined): void {
  if (!stdoutWritten) {
    stdoutWritten = true;
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EPIPE') process.exit(exitCode() ?? 0);
    });
  }
  process.stdout.write(text);
}

/** An agent hook's payload (the server has no stdin of the client's). */
let input: HookInput | undefined;

const isHook = process.argv[2] === 'hook';

/**
 * Settles once a hook's payload is read whole (at once for any other command): read before
 * anything else is decided, served or not, since stdin cannot be read twice, and while the
 * client connects.
 */
const inputRead: Promise<void> = isHook
  ? readHookInput(process.stdin).then((read) => {
      input = read;
    })
  : Promise.resolve();

/** `run`'s command, started here with the person's terminal (its module loaded on first use: no other command needs it). */
function startChild(argv: string[], sessionId: string): { end: Promise<ChildEnd>; kill(signal: NodeJS.Signals): void } {
  let started: ChildProcess | undefined;
  let early: NodeJS.Signals | undefined;
  const end = Promise.all([import('./command-process.js'), import('./invocation.js')]).then(([{ spawnCommand }, { childEnd }]) => {
    started = spawnCommand(argv, sessionId);
    if (early !== undefined) started.kill(early);
    return childEnd(started, argv[0] as string);
  });
  return {
    end,
    kill: (signal) => {
      if (started === undefined) early = signal;
      else if (started.exitCode === null && started.signalCode === null) started.kill(signal);
    },
  };
}

/**
 * A served hook whose server took it and did not finish by the deadline it promised: the hook
 * records the gap in the hook log the server named and leaves, so the agent goes ahead. The
 * server may still finish it; the line says the hook did not wait.
 */
function hookOverdue(log: string, error: string): void {
  const line = { at: new Date().toISOString(), agent: process.argv[3] ?? '', event: process.argv[4] ?? '', ok: false, error, ms: Date.now() - startedAt };
  try {
    appendFileSync(log, `${JSON.stringify(line)}\n`, { mode: 0o600 });
  } catch {
    // An unwritable log: the agent still goes ahead.
  }
  process.exit(0);
}

/** A socket path no server can listen on (a folder planted there): said once, then every command runs here. */
function blocked(socket: string): boolean {
  const what = socketBlocker(socket);
  if (what === undefined) return false;
  if (firstReportOfBlock(socket)) process.stderr.write(`turnback: ${shownText(blockedLine(shownPath(socket), what))}\n`);
  return true;
}

function served(address: { socket: string; mainFile: string }): void {
  const socket = net.connect(address.socket);
  const send = (frame: ClientFrame): void => sendFrame(socket, frame);
  // Once the server has said or started anything, running the command again here would do it twice.
  let committed = false;
  let exitCode: number | undefined;
  let child: { end: Promise<ChildEnd>; kill(signal: NodeJS.Signals): void } | undefined;
  const isRun = process.argv[2] === 'run';
  let hello = false;
  let requested = false;
  let fellBack = false;
  /** Runs the command here instead, once, and only while nothing was said or started. */
  const fallBack = (): void => {
    if (committed) return;
    committed = true;
    fellBack = true;
    clearTimeout(helloTimer);
    clearTimeout(acceptTimer);
    if (isRun) for (const signal of INTERRUPTS) process.off(signal, onInterrupt);
    socket.destroy();
    inProcess();
  };
  const helloTimer = setTimeout(fallBack, isHook ? HELLO_TIMEOUT_MS / 2 : HELLO_TIMEOUT_MS);
  let acceptTimer: NodeJS.Timeout | undefined;
  /** The hook log a served hook's server named (in its `accepted`). */
  let hookLog: string | undefined;

  const onInterrupt = (signal: NodeJS.Signals): void => {
    child?.kill(signal);
    send({ t: 'signal', signal });
  };
  // Only `run` outlives Ctrl-C (it forwards it to its command and still lists what changed);
  // every other command ends on it, as it would in-process.
  if (isRun) for (const signal of INTERRUPTS) process.on(signal, onInterrupt);

  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (hello) return;
    // No server yet (or a dead one's socket): start one for the next command.
    if ((error.code === 'ENOENT' || error.code === 'ECONNREFUSED') && !blocked(address.socket)) {
      void import('../server/launch.js').then(({ launchServer }) => launchServer(address, process.env));
      // The command below tells that server which project it pictures, so its watch starts now (watch-hint.ts).
      (globalThis as Record<symbol, unknown>)[LAUNCHED_SERVER] = address.socket;
    }
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
    // A hook never fails the agent: the gap goes to the hook log the server named.
    if (hookLog !== undefined) hookOverdue(hookLog, 'the command server stopped before this hook finished: the agent went ahead, and the event may be missing');
    process.stderr.write('turnback: the checkpoint server stopped before the command finished\n');
    process.exitCode = 1;
  };

  /** The command, its folder and terminals, and a hook's payload: sent once, unless the command runs here by then. */
  const sendRequest = (): void => {
    if (requested || committed || socket.destroyed) return;
    requested = true;
    const request: ClientFrame = {
      t: 'request',
      argv: process.argv,
      cwd: process.cwd(),
      pid: process.pid,
      env: relayed,
      stdout: terminalShape(1),
      stderr: terminalShape(2),
      startedAt,
      ...(input !== undefined ? { input: input.text, ...(input.gap !== undefined ? { inputGap: input.gap } : {}) } : {}),
    };
    const line = JSON.stringify(request);
    // A frame the server would refuse (a payload escaped past its line limit) is never sent.
    if (line.length >= MAX_LINE) {
      fallBack();
      return;
    }
    socket.write(`${line}\n`);
    if (isHook) acceptTimer = setTimeout(fallBack, Math.max(0, Math.min(TAKEN_TIMEOUT_MS, startedAt + BEFORE_BUDGET_MS - Date.now())));
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
        // A hook's payload may still be arriving: the request goes once it is whole.
        void inputRead.then(sendRequest);
        return;
      case 'taken':
        clearTimeout(acceptTimer);
        if (isHook) acceptTimer = setTimeout(fallBack, Math.max(0, startedAt + BEFORE_BUDGET_MS - Date.now()));
        return;
      case 'accepted': {
        clearTimeout(acceptTimer);
        committed = true;
        const deadline = typeof frame.deadline === 'number' ? frame.deadline : startedAt;
        if (typeof frame.log === 'string') {
          const log = frame.log;
          hookLog = log;
          const seconds = Math.round((deadline - startedAt) / 1000);
          setTimeout(() => hookOverdue(log, `the command server did not finish this hook within its budget (${seconds} s): the agent went ahead, and the event may be missing`), Math.max(0, deadline - HOOK_LEAVE_MS - Date.now())).unref();
        }
        return;
      }
      case 'out':
        committed = true;
        if (typeof frame.text === 'string') writeOut(frame.text, () => exitCode);
        return;
      case 'err':
        committed = true;
        if (typeof frame.text === 'string') process.stderr.write(frame.text);
        return;
      case 'spawn':
        committed = true;
        child = startChild(frame.argv as string[], String(frame.sessionId));
        void child.end.then((result) => {
          send({ t: 'child', code: result.code, signal: result.signal ?? null, ...(result.spawnError !== undefined ? { spawnError: result.spawnError } : {}) });
        });
        return;
      case 'exit':
        clearTimeout(acceptTimer);
        committed = true;
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

/** What of this process's environment the served command gets (environment.ts). */
const relayed = relayedVariables(process.env);
// An environment past the bounds the server accepts is never sent: the command runs here.
const address = SERVED_COMMANDS.has(process.argv[2] ?? '') && checkedVariables(relayed) !== undefined ? serverAddress(path.join(__dirname, 'main.cjs'), process.env) : undefined;
if (address === undefined) inProcess();
else served(address);
