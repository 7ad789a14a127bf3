import * as path from 'node:path';
import { SERVED_COMMANDS } from './address.js';
import { checkedVariables } from './environment.js';
import type { TerminalShape } from './frames.js';

// A client's request, checked field by field before anything runs: a frame that is not one a
// client of ours sends closes the connection, and nothing is run.

/** A request frame that passed every check. */
export interface Request {
  argv: string[];
  cwd: string;
  pid: number;
  /** The client's relayed variables (environment.ts): the served command's environment. */
  env: Record<string, string>;
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

/**
 * `frame` as a request, or `undefined`: argv of a served command, an absolute folder, a pid,
 * the client's environment (bounded, relayed names only), its terminals, and a hook's payload.
 */
export function requestOf(frame: Record<string, unknown>): Request | undefined {
  const { argv, cwd, pid } = frame;
  if (!Array.isArray(argv) || argv.length < 3 || argv.length > 100_000 || !argv.every((a) => typeof a === 'string')) return undefined;
  if (!SERVED_COMMANDS.has(argv[2] as string)) return undefined;
  if (typeof cwd !== 'string' || !path.isAbsolute(cwd)) return undefined;
  if (!Number.isSafeInteger(pid) || (pid as number) <= 0) return undefined;
  const env = checkedVariables(frame.env);
  if (env === undefined) return undefined;
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
    env,
    stdout,
    stderr,
    ...(typeof frame.startedAt === 'number' ? { startedAt: frame.startedAt } : {}),
    ...(typeof frame.input === 'string' ? { input: frame.input } : {}),
    ...(typeof frame.inputGap === 'string' ? { inputGap: frame.inputGap } : {}),
  };
}
