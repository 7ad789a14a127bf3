import { constants as osConstants } from 'node:os';
import type { StoreView } from '../index.js';
import { spawnCommand } from './command-process.js';
import type { GitRepo } from './git.js';

// One command's surroundings. The same command code runs in the person's own process (in-process)
// and in the per-user server for a client that relays (served, see server.ts): everything a
// command would otherwise take from `process` — the folder it was started in, its output, its
// signals, the child `run` starts — comes from here, so two commands served at once never share
// a folder, an output or a cache.

/** Where a command writes text: a terminal, a pipe, or a client's relay. */
export interface TextSink {
  write(text: string): void;
  /** True when it is a terminal (colour, progress lines rewritten in place). */
  readonly isTTY: boolean;
  /** The terminal's width, when it is one. */
  readonly columns?: number;
}

/** How the command `run` started ended. */
export interface ChildEnd {
  code: number;
  signal: NodeJS.Signals | undefined;
  /** Why it could not be started (not found, not executable). */
  spawnError?: string;
}

/** The signals a command reacts to (Ctrl-C, `kill`, a closed terminal). */
export const INTERRUPTS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** One command's folder, output, signals and child, in-process or served. */
export interface Invocation {
  /** The folder the person started the command in. */
  readonly cwd: string;
  /** The process the person started (in-process: this one; served: the client). */
  readonly pid: number;
  readonly stdout: TextSink;
  readonly stderr: TextSink;
  /** What the client read from its stdin and relayed (served `turnback hook`: the agent's payload). */
  readonly input?: string;
  /** Why `input` is not the agent's whole payload (stdin never closed, over the limit): a gap the hook records. */
  readonly inputGap?: string;
  /** When the person's process started (epoch ms): a hook's budget counts from there, served or not. */
  readonly startedAt?: number;
  /**
   * A served hook tells its client, before it changes anything, by when it will be done and
   * where its log is; `false` when the client has gone (it then runs the hook itself).
   */
  accept?(promise: { deadline: number; log: string }): boolean;
  /** The person's input, for the commands that ask (in-process only; absent when served). */
  readonly stdin?: NodeJS.ReadStream;
  /** The person's terminal for the picker (in-process only). */
  readonly terminal?: NodeJS.WriteStream;
  /** Calls `listener` on each interrupt until the returned function is called. */
  onInterrupt(listener: (signal: NodeJS.Signals) => void): () => void;
  /** Starts `argv` with the person's terminal, marked as run `sessionId`, and waits for its end. */
  runChild(argv: readonly string[], sessionId: string): Promise<ChildEnd>;
  /** The git repositories asked about during this command, by project root. */
  readonly repos: Map<string, Promise<GitRepo | undefined>>;
  /** The stores this command opened, closed when it ends. */
  readonly opened: StoreView[];
}

/** Waits for a started child's end, as `run` reports it (128 + the signal's number for a signal). */
export function childEnd(child: ReturnType<typeof spawnCommand>, file: string): Promise<ChildEnd> {
  return new Promise((resolve) => {
    child.once('error', (error: NodeJS.ErrnoException) => {
      resolve({ code: error.code === 'ENOENT' ? 127 : 126, signal: undefined, spawnError: `cannot run ${file}: ${error.code === 'ENOENT' ? 'command not found' : error.message}` });
    });
    child.once('exit', (code, signal) => {
      if (signal !== null) resolve({ code: 128 + (osConstants.signals[signal] ?? 0), signal });
      else resolve({ code: code ?? 1, signal: undefined });
    });
  });
}

/** Starts `argv` here and forwards this process's interrupts to it until it ends. */
export async function runChildHere(argv: readonly string[], sessionId: string): Promise<ChildEnd> {
  const child = spawnCommand(argv, sessionId);
  const forward = (signal: NodeJS.Signals): void => {
    // The child usually got a terminal signal too (same process group); forwarding covers `kill <pid>`.
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of INTERRUPTS) process.on(signal, forward);
  try {
    return await childEnd(child, argv[0] as string);
  } finally {
    for (const signal of INTERRUPTS) process.off(signal, forward);
  }
}

/**
 * Where the client leaves stdin it read already (a hook's payload, `{ text, gap? }`) when it then
 * runs the command in its own process after all: stdin cannot be read twice.
 */
export const HANDED_INPUT: unique symbol = Symbol.for('turnback.handed-input');

/** The invocation of a command run in this very process. */
export function processInvocation(): Invocation {
  const handed = (globalThis as Record<symbol, unknown>)[HANDED_INPUT] as { text?: unknown; gap?: unknown } | undefined;
  return {
    cwd: process.cwd(),
    pid: process.pid,
    startedAt: Math.round(performance.timeOrigin),
    ...(typeof handed?.text === 'string' ? { input: handed.text } : {}),
    ...(typeof handed?.gap === 'string' ? { inputGap: handed.gap } : {}),
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    terminal: process.stdout,
    onInterrupt(listener) {
      for (const signal of INTERRUPTS) process.on(signal, listener);
      return () => {
        for (const signal of INTERRUPTS) process.off(signal, listener);
      };
    },
    runChild: runChildHere,
    repos: new Map(),
    opened: [],
  };
}
