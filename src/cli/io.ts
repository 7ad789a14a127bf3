import { isCheckpointError } from '../index.js';
import type { LineStyle } from '../report/style.js';
import { styleFor } from './colour.js';
import { EXIT, type ExitCode } from './exit-codes.js';
import type { Invocation } from './invocation.js';

/** Where a command writes: human lines, or one JSON document with `--json`. */
export class Io {
  readonly json: boolean;
  /** The command's folder, output, signals and child (in-process or served). */
  readonly invocation: Invocation;
  /** Style for stdout lines. */
  readonly style: LineStyle;
  /** Style for stderr lines. */
  readonly errStyle: LineStyle;

  constructor(json: boolean, invocation: Invocation) {
    this.json = json;
    this.invocation = invocation;
    this.style = json ? styleFor({}) : styleFor(invocation.stdout);
    this.errStyle = styleFor(invocation.stderr);
  }

  /** Text on stdout as it is (a diff), suppressed with `--json`. */
  raw(text: string): void {
    if (!this.json && text.length > 0) this.invocation.stdout.write(text);
  }

  /** Human output on stdout (suppressed with `--json`). */
  out(...lines: string[]): void {
    if (this.json || lines.length === 0) return;
    this.invocation.stdout.write(`${lines.join('\n')}\n`);
  }

  /** Notices on stderr, always (scripts read stdout). */
  err(...lines: string[]): void {
    if (lines.length === 0) return;
    this.invocation.stderr.write(`${lines.join('\n')}\n`);
  }

  /** The one JSON document of a `--json` command, on stdout. */
  emit(value: unknown): void {
    if (this.json) this.invocation.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }
}

/** A deliberate exit with a message (nothing to undo, cancelled, bad path). */
export class CliExit extends Error {
  readonly exitCode: ExitCode;
  /** Machine-readable reason for `--json`. */
  readonly reason: string;

  constructor(exitCode: ExitCode, reason: string, message: string) {
    super(message);
    this.name = 'CliExit';
    this.exitCode = exitCode;
    this.reason = reason;
  }
}

/** The exit code, reason and message for anything a command threw. */
export function describeFailure(error: unknown, command?: string): { exitCode: ExitCode; reason: string; message: string } {
  if (error instanceof CliExit) return { exitCode: error.exitCode, reason: error.reason, message: error.message };
  if (isCheckpointError(error)) {
    switch (error.code) {
      case 'STORE_BUSY':
        return { exitCode: EXIT.busy, reason: error.code, message: 'the checkpoint store is busy (another session is using it); try again when it finishes' };
      case 'UNKNOWN_CHECKPOINT':
        // The store's message says which: never existed here, pruned by retain, cleared, dropped.
        return { exitCode: EXIT.error, reason: error.code, message: error.message };
      case 'OUTSIDE_ROOT':
        // Named after the command typed (`diff`, `show`, `undo`): a path outside the project is its argument.
        return { exitCode: EXIT.usage, reason: error.code, message: `${command ?? 'turnback'} takes a path inside the project (${error.path ?? error.message})` };
      case 'INVALID_ID':
      case 'INVALID_ARGUMENT':
      case 'INVALID_PATH':
      case 'INVALID_CONFIG':
        return { exitCode: EXIT.usage, reason: error.code, message: error.message };
      default:
        return { exitCode: EXIT.error, reason: error.code, message: error.message };
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return { exitCode: EXIT.error, reason: 'ERROR', message };
}
