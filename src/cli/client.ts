import { appendFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { childEnd, HANDED_INPUT } from './invocation.js';
import { INTERRUPTS, type ChildEnd } from '../server/seam.js';
import { spawnCommand } from './command-process.js';
import { blockedLine, firstReportOfBlock, PROTOCOL_VERSION, SERVED_COMMANDS, serverAddress, socketBlocker } from '../server/address.js';
import { launchServer } from '../server/launch.js';
import { checkedVariables, relayedVariables } from '../server/environment.js';
import { MAX_LINE, readFrames, sendFrame, type ClientFrame } from '../server/frames.js';
import { HOOK_LEAVE_MS, readHookInput, type HookInput } from './hook-input.js';
import { shownPath, shownText } from '../report/escape.js';

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

function terminalShape(stream: NodeJS.WriteStream): { tty: boolean; columns?: number } {
  return stream.isTTY === true && typeof stream.columns === 'number' ? { tty: true, columns: stream.columns } : { tty: stream.isTTY === true };
}

/** An agent hook's payload, read before connecting (the server has no stdin of the client's). */
let input: HookInput | undefined;

const isHook = process.argv[2] === 'hook';

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
  const helloTimer = setTimeout(fallBack, isHook ? Math.max(0, Math.min(HELLO_TIMEOUT_MS / 2, startedAt + BEFORE_BUDGET_MS - Date.now())) : HELLO_TIMEOUT_MS);
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

  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    // `turnback list | head`: stop quietly.
    if (error.code === 'EPIPE') process.exit(exitCode ?? 0);
  });
  socket.on('error', (error: NodeJS.ErrnoException) => {
    if (hello) return;
    // No server yet (or a dead one's socket): start one for the next command.
    if ((error.code === 'ENOENT' || error.code === 'ECONNREFUSED') && !blocked(address.socket)) launchServer(address, process.env);
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

  readFrames(socket, (frame) => {
    switch (frame.t) {
      case 'hello':
        clearTimeout(helloTimer);
        if (frame.protocol !== PROTOCOL_VERSION) {
          fallBack();
          return;
        }
        hello = true;
        {
          const request: ClientFrame = {
            t: 'request',
            argv: process.argv,
            cwd: process.cwd(),
            pid: process.pid,
            env: relayed,
            stdout: terminalShape(process.stdout),
            stderr: terminalShape(process.stderr),
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
        }
        if (isHook) acceptTimer = setTimeout(fallBack, Math.min(TAKEN_TIMEOUT_MS, startedAt + BEFORE_BUDGET_MS - Date.now()));
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
const start = (): void => (address === undefined ? inProcess() : served(address));
if (isHook) {
  // Read whole before anything else, served or not: stdin cannot be read twice.
  void readHookInput(process.stdin).then((read) => {
    input = read;
    start();
  });
} else start();
