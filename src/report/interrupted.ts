import type { Gap } from '../index.js';
import { DEFAULTS } from '../core/defaults.js';
import { shownPath, shownText } from './escape.js';
import { moreLine, rowsShown } from './folding.js';
import { noCopyText, uncopiedReasonOf } from './reasons.js';
import { plainStyle, type LineStyle } from './style.js';
import type { ReportChange } from './turn-end-list.js';

/** A command that was running when turnback itself was killed, and what changed since its picture. */
export interface InterruptedInput {
  command: string | undefined;
  startedAt: string;
  changes: readonly ReportChange[];
  gaps?: readonly Gap[];
  partial?: boolean;
  summary?: string;
  /** @default 'turnback undo' */
  undoCommand?: string;
  /** @default 100 */
  maxFileMib?: number;
  /** Rows shown before `… and N more`. @default 10 */
  maxRows?: number;
}

/**
 * The notice for an interrupted run (seed 001, "Resuming a killed session"):
 *
 * ```
 * turnback was killed while a command ran: `printf x >> a.txt`. It may have partly run; its output was not recorded.
 *   Since it started:
 *     changed   a.txt      turnback undo restores
 *     new       started
 *   Not covered: gitignored files, anything outside the project.
 * ```
 */
export function renderInterruptedNotice(input: InterruptedInput, style: LineStyle = plainStyle): string[] {
  const undo = input.undoCommand ?? 'turnback undo';
  const maxFileMib = input.maxFileMib ?? DEFAULTS.maxFileMib;
  const maxRows = input.maxRows ?? 10;
  const what = input.command !== undefined ? `\`${shownText(input.command)}\`` : 'a command';
  const lines = [style.warn(`turnback was killed while a command ran: ${what} (started ${input.startedAt}). It may have partly run; its output was not recorded.`)];
  if (input.changes.length === 0) {
    lines.push('  Since it started: no files changed.');
  } else {
    lines.push('  Since it started:');
    const allowed = rowsShown(input.changes.length, maxRows);
    const width = Math.min(40, Math.max(...input.changes.slice(0, allowed).map((c) => c.path.length)));
    for (const change of input.changes.slice(0, allowed)) {
      const word = change.kind === 'created' ? 'new' : change.kind;
      const reason = change.kind === 'created' ? undefined : uncopiedReasonOf(change.before);
      const tail = change.kind === 'created' ? '' : reason !== undefined ? noCopyText(reason, maxFileMib) : style.bold(`${undo} restores`);
      lines.push(`    ${word.padEnd(8)}  ${shownPath(change.path).padEnd(width)}${tail.length > 0 ? `   ${tail}` : ''}`.trimEnd());
    }
    if (input.changes.length > allowed) {
      const rest = input.changes.slice(allowed);
      lines.push(style.dim(`    ${moreLine([['changed', rest.filter((c) => c.kind === 'changed').length], ['new', rest.filter((c) => c.kind === 'created').length], ['deleted', rest.filter((c) => c.kind === 'deleted').length]])}`));
    }
  }
  if (input.partial === true) {
    lines.push(style.dim(`  checkpoint partial: ${input.summary !== undefined && input.summary.length > 0 ? shownText(input.summary) : 'the picture stopped early'}`));
  }
  lines.push(style.dim('  Not covered: gitignored files, anything outside the project.'));
  return lines;
}

/** A restore killed mid-apply, as the command that put it right found it (see `RecoveredRestore`). */
export interface RecoveredRestoreInput {
  label?: string;
  planned: number;
  written: number;
  finished: boolean;
  kept: readonly string[];
  failed: readonly string[];
  removedLeftovers: readonly string[];
}

/** `an undo`, `a redo`, `a revert` or `a restore`, from its save's label. */
function restoreKind(label: string | undefined): string {
  if (label?.startsWith('before undo') === true) return 'an undo';
  if (label?.startsWith('before redo') === true) return 'a redo';
  if (label?.startsWith('before revert') === true) return 'a revert';
  return 'a restore';
}

/**
 * The notice, said once, by the command that rolled back a killed restore:
 *
 * ```
 * turnback: an undo was killed after writing back 75 of 2,000 files; rolled back: every file is as it was before that undo (run it again to undo)
 *   removed 3 files it left: d/.turnback-displaced-…, …
 * ```
 */
export function renderRecoveredRestore(input: RecoveredRestoreInput, style: LineStyle = plainStyle): string[] {
  const kind = restoreKind(input.label);
  const count = (n: number): string => n.toLocaleString('en-US');
  const lines: string[] = [];
  if (input.finished) {
    if (input.removedLeftovers.length > 0) lines.push(style.warn(`turnback: ${kind} was killed while it cleaned up (every file had been written back): removed the ${input.removedLeftovers.length === 1 ? 'file' : `${input.removedLeftovers.length} files`} it left`));
  } else if (input.planned > 0 || input.written > 0) {
    const back = input.failed.length === 0 ? `rolled back: every file is as it was before that ${kind.split(' ')[1]}` : `rolled back, except ${input.failed.length === 1 ? 'one file' : `${input.failed.length} files`} (its original is in the save)`;
    lines.push(style.warn(`turnback: ${kind} was killed after writing back ${count(input.written)} of ${count(input.planned)} ${input.planned === 1 ? 'file' : 'files'}; ${back} (run it again to finish it)`));
    if (input.kept.length > 0) lines.push(`  kept, changed since by someone else: ${input.kept.slice(0, 5).map(shownPath).join(', ')}${input.kept.length > 5 ? ` and ${input.kept.length - 5} more` : ''}`);
    if (input.failed.length > 0) lines.push(`  not written back: ${input.failed.slice(0, 5).map(shownPath).join(', ')}${input.failed.length > 5 ? ` and ${input.failed.length - 5} more` : ''}`);
    if (input.removedLeftovers.length > 0) lines.push(style.dim(`  removed ${input.removedLeftovers.length === 1 ? 'the file' : `the ${input.removedLeftovers.length} files`} it left (.turnback-stage-*, .turnback-displaced-*)`));
  } else if (input.removedLeftovers.length > 0) {
    lines.push(style.warn(`turnback: removed ${input.removedLeftovers.length === 1 ? 'the file' : `the ${input.removedLeftovers.length} files`} a killed restore left (.turnback-stage-*, .turnback-displaced-*)`));
  }
  return lines;
}
