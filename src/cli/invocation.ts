import { constants as osConstants } from 'node:os';
import type { StoreView } from '../index.js';
import type { ChildProcess } from 'node:child_process';
import { spawnCommand } from './command-process.js';
import type { GitRepo } from './git.js';
import { INTERRUPTS, type ChildEnd, type ProcessSeam } from '../server/seam.js';
import { HANDED_INPUT } from './hook-input.js';

// One command's surroundings. The same command code runs in the person's own process (in-process)
// and in the per-user server for a client that relays (served, see server.ts): everything a
// command would otherwise take from `process` — the folder it was started in, its output, its
// signals, the child `run` starts — comes from here, so two commands served at once never share
// a folder, an output or a cache.

/** One command's surroundings: its process seam, and the caches that live as long as the command. */
export interface Invocation extends ProcessSeam {
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
  let child: ChildProcess | undefined;
  const forward = (signal: NodeJS.Signals): void => {
    // The child usually got a terminal signal too (same process group); forwarding covers `kill <pid>`.
    if (child !== undefined && child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  // Listening before the child exists: spawn() returns only milliseconds after the child started
  // (fork and exec of a large process), and a signal the child provokes meanwhile must find a
  // listener. It is handled once spawn() has returned, so `child` is set by then.
  for (const signal of INTERRUPTS) process.on(signal, forward);
  try {
    child = spawnCommand(argv, sessionId);
    return await childEnd(child, argv[0] as string);
  } finally {
    for (const signal of INTERRUPTS) process.off(signal, forward);
  }
}


/** A command's invocation over the seam it runs on, with its caches still empty. */
export function invocationOf(seam: ProcessSeam): Invocation {
  return { ...seam, repos: new Map(), opened: [] };
}

/** The invocation of a command run in this very process. */
export function processInvocation(): Invocation {
  const handed = (globalThis as Record<symbol, unknown>)[HANDED_INPUT] as { text?: unknown; gap?: unknown } | undefined;
  return invocationOf({
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
  });
}
