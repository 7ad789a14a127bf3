import type { PlanEntry, RestoreReport } from '../index.js';
import { DEFAULTS } from '../core/defaults.js';
import { shownPath, shownText } from './escape.js';
import { moreLine, rowsShown } from './folding.js';
import { planReasonText } from './reasons.js';
import { plainStyle, type LineStyle } from './style.js';

/** The verb a preview shows for a plan entry; `undefined` rows are not shown (already as they were). */
export type PreviewVerb = 'write back' | 'recreate' | 'delete' | 'kept' | 'leave' | 'skip';

/** One preview row. */
export interface PreviewRow {
  verb: PreviewVerb;
  path: string;
  /** Why, in words (empty when the verb says it all). */
  note: string;
}

/** The undo preview as data (what `undo --dry-run --json` prints). */
export interface UndoPreview {
  /** What the undo goes back to, e.g. `before ./tidy.sh`. */
  label: string;
  /** The header's first words. @default `undo to <label>` */
  title: string;
  rows: PreviewRow[];
  counts: Record<PreviewVerb, number>;
  /** Paths already as they were at the picture (not shown as rows). */
  unchanged: number;
  /** True when applying would write at least one file. */
  writes: boolean;
}

const VERB_ORDER: PreviewVerb[] = ['write back', 'recreate', 'delete', 'kept', 'leave', 'skip'];

/** The preview verb of a plan entry. */
export function previewVerb(entry: Pick<PlanEntry, 'action' | 'reason'>): PreviewVerb | undefined {
  switch (entry.action) {
    case 'restore':
      return 'write back';
    case 'recreate':
      return 'recreate';
    case 'delete':
      return 'delete';
    case 'leave':
      return entry.reason === 'created-since' ? 'kept' : 'leave';
    case 'refuse':
      return 'skip';
    case 'skip':
      return entry.reason === 'already-matches' ? undefined : 'skip';
    default:
      return 'skip';
  }
}

/** Builds the preview of a restore plan. Pure. */
export function buildUndoPreview(label: string, entries: readonly PlanEntry[], maxFileMib: number = DEFAULTS.maxFileMib, title?: string): UndoPreview {
  const counts: Record<PreviewVerb, number> = { 'write back': 0, recreate: 0, delete: 0, kept: 0, leave: 0, skip: 0 };
  const rows: PreviewRow[] = [];
  let unchanged = 0;
  for (const entry of entries) {
    const verb = previewVerb(entry);
    if (verb === undefined) {
      unchanged += 1;
      continue;
    }
    counts[verb] += 1;
    const note = entry.reason === 'mode-only' || entry.reason === 'forced' || entry.reason === 'in-the-way' || entry.reason === 'folder-in-the-way' || verb === 'kept' ? planReasonText(entry.reason, maxFileMib) : verb === 'write back' || verb === 'recreate' || verb === 'delete' ? '' : planReasonText(entry.reason, maxFileMib);
    rows.push({ verb, path: entry.path, note });
  }
  rows.sort((a, b) => VERB_ORDER.indexOf(a.verb) - VERB_ORDER.indexOf(b.verb) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const writes = counts['write back'] + counts.recreate + counts.delete > 0;
  return { label, title: title ?? `undo to ${label}`, rows, counts, unchanged, writes };
}

/** The header line: `undo to before ./tidy.sh: 1 to write back, 1 to recreate, 1 kept, 1 left alone`. */
export function previewHeader(preview: UndoPreview): string {
  const c = preview.counts;
  const parts: string[] = [];
  if (c['write back'] > 0) parts.push(`${c['write back']} to write back`);
  if (c.recreate > 0) parts.push(`${c.recreate} to recreate`);
  if (c.delete > 0) parts.push(`${c.delete} to delete`);
  if (c.kept > 0) parts.push(`${c.kept} kept`);
  if (c.leave > 0) parts.push(`${c.leave} left alone`);
  if (c.skip > 0) parts.push(`${c.skip} skipped`);
  return `${preview.title}: ${parts.length > 0 ? parts.join(', ') : 'nothing to change'}`;
}

/** Draws the preview: the header, then one line per row (`  write back  src/parser.rs`). */
export function renderUndoPreview(preview: UndoPreview, style: LineStyle = plainStyle, maxRows = 10): string[] {
  const lines = [style.bold(previewHeader(preview))];
  // Writes past maxRows fold into one line; rows that are not written (kept, left, skipped) always show.
  const isWrite = (verb: string): boolean => verb === 'write back' || verb === 'recreate' || verb === 'delete';
  const allowed = rowsShown(preview.rows.filter((row) => isWrite(row.verb)).length, maxRows);
  let writes = 0;
  const hidden = new Map<string, number>([['to write back', 0], ['to recreate', 0], ['to delete', 0]]);
  let hiddenRows = 0;
  for (const row of preview.rows) {
    if (isWrite(row.verb)) {
      writes += 1;
      if (writes > allowed) {
        const word = `to ${row.verb}`;
        hidden.set(word, (hidden.get(word) ?? 0) + 1);
        hiddenRows += 1;
        continue;
      }
    }
    const note = row.note.length > 0 ? `   ${row.verb === 'skip' || row.verb === 'leave' ? style.warn(row.note) : style.dim(row.note)}` : '';
    lines.push(`  ${row.verb.padEnd(10)}  ${shownPath(row.path)}${note}`);
  }
  if (hiddenRows > 0) lines.splice(1 + allowed, 0, style.dim(`  ${moreLine([...hidden])}`));
  return lines;
}

/** The receipt verb of a restored entry. */
function doneVerb(entry: PlanEntry): string {
  switch (entry.action) {
    case 'recreate':
      return 'recreated';
    case 'delete':
      return 'deleted';
    default:
      return 'written';
  }
}

/**
 * Draws the receipt after a restore:
 *
 * ```
 * restored 2 files to before ./tidy.sh
 *   written     src/parser.rs
 *   recreated   docs/notes/a.md
 *   skipped     big.bin   no copy (over 100 MiB)
 *   kept        scripts/tidy.sh
 *   saved first: turnback undo can undo this
 * ```
 */
export function renderReceipt(
  label: string,
  report: Pick<RestoreReport, 'restored' | 'refused' | 'skipped' | 'failed' | 'preRestoreId' | 'cleanupPending'> & { removedFolders?: readonly string[]; irreversible?: RestoreReport['irreversible'] },
  style: LineStyle = plainStyle,
  options: { maxFileMib?: number; undoCommand?: string; maxRows?: number } = {},
): string[] {
  const maxRows = options.maxRows ?? 10;
  const maxFileMib = options.maxFileMib ?? DEFAULTS.maxFileMib;
  const n = report.restored.length;
  const lines = [style.bold(`restored ${n} ${n === 1 ? 'file' : 'files'} to ${shownText(label)}`)];
  const row = (verb: string, path: string, note = ''): string => `  ${verb.padEnd(10)}  ${shownPath(path)}${note.length > 0 ? `   ${note}` : ''}`;
  const order = { written: 0, recreated: 1, deleted: 2 } as Record<string, number>;
  const restored = [...report.restored].sort((a, b) => (order[doneVerb(a)] ?? 0) - (order[doneVerb(b)] ?? 0) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const allowed = rowsShown(restored.length, maxRows);
  for (const entry of restored.slice(0, allowed)) {
    lines.push(row(doneVerb(entry), entry.path, entry.reason === 'mode-only' || entry.reason === 'in-the-way' || entry.reason === 'folder-in-the-way' ? planReasonText(entry.reason, maxFileMib) : ''));
  }
  if (restored.length > allowed) {
    const rest = restored.slice(allowed);
    lines.push(style.dim(`  ${moreLine(['written', 'recreated', 'deleted'].map((verb) => [verb, rest.filter((entry) => doneVerb(entry) === verb).length] as const))}`));
  }
  const kept: PlanEntry[] = [];
  for (const entry of [...report.refused, ...report.skipped]) {
    if (!notBroughtBack(entry)) {
      if (entry.action === 'leave' && entry.reason === 'created-since') kept.push(entry);
      continue;
    }
    lines.push(row('skipped', entry.path, style.warn(planReasonText(entry.reason, maxFileMib))));
  }
  for (const entry of kept) lines.push(row('kept', entry.path));
  for (const failure of report.failed) lines.push(row('failed', failure.path, style.warn(shownText(failure.error))));
  for (const folder of report.removedFolders ?? []) lines.push(row('removed', `${folder}/`, style.dim('an emptied folder made since the picture')));
  for (const leftover of report.cleanupPending) lines.push(row('leftover', leftover, style.warn('a temporary file; inspect and remove it by hand')));
  // What a file restore cannot take back: calls that reached the network or another machine.
  for (const call of report.irreversible ?? []) lines.push(row('not undone', `call ${call.callId}`, style.warn(call.sideEffect === 'network' ? 'it reached the network: a file restore cannot take that back' : `its ${call.sideEffect} effect is not a file`)));
  if (report.preRestoreId !== undefined) lines.push(style.dim(`  saved first: ${options.undoCommand ?? 'turnback undo'} can undo this`));
  return lines;
}

/**
 * True when a restore's refused or skipped entry is a file it did not bring back (a receipt's
 * `skipped` row): not one already as it was, and not a file created since that it keeps.
 */
export function notBroughtBack(entry: PlanEntry): boolean {
  if (entry.action === 'skip' && (entry.reason === 'already-matches' || entry.reason === ('not-changed-since' as string))) return false;
  return !(entry.action === 'leave' && entry.reason === 'created-since');
}

/**
 * The last line of a restore that did not bring every file back, e.g. `not brought back: 2 files
 * (1 its stored copy is missing or damaged (turnback verify), 1 changed since (your version is
 * kept))`; `undefined` when it brought back every file it meant to.
 */
export function skippedSummary(reports: readonly Pick<RestoreReport, 'refused' | 'skipped'>[], maxFileMib: number = DEFAULTS.maxFileMib): string | undefined {
  const byReason = new Map<string, number>();
  let total = 0;
  for (const report of reports) {
    for (const entry of [...report.refused, ...report.skipped]) {
      if (!notBroughtBack(entry)) continue;
      total += 1;
      const words = planReasonText(entry.reason, maxFileMib) || 'skipped';
      byReason.set(words, (byReason.get(words) ?? 0) + 1);
    }
  }
  if (total === 0) return undefined;
  const reasons = [...byReason].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([words, count]) => `${count} ${shownText(words)}`);
  return `not brought back: ${total} ${total === 1 ? 'file' : 'files'} (${reasons.join('; ')})`;
}

/**
 * The receipt of a restore cancelled before its commit point (Ctrl-C): every write was rolled
 * back, so nothing failed and there is nothing to undo — only what the rollback could not clean,
 * if anything, is listed.
 *
 * ```
 * cancelled, nothing changed: undo to before ./tidy.sh was stopped and rolled back
 * ```
 */
export function renderCancelledReceipt(label: string, report: Pick<RestoreReport, 'cleanupPending'>, style: LineStyle = plainStyle): string[] {
  const whole = report.cleanupPending.length === 0;
  const lines = [style.bold(`${whole ? 'cancelled, nothing changed' : 'cancelled and rolled back'}: the restore to ${shownText(label)} was stopped before it finished`)];
  for (const leftover of report.cleanupPending) lines.push(`  ${'leftover'.padEnd(10)}  ${shownPath(leftover)}   ${style.warn('the rollback could not clean this; inspect and remove it by hand')}`);
  return lines;
}
