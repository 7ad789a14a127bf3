import ignore from 'ignore';
import type { Gap, PathState } from '../index.js';
import { DEFAULTS } from '../core/defaults.js';
import { hasRawBytes } from '../core/raw-names.js';
import { shownPath, shownText } from './escape.js';
import { moreLine, rowsShown } from './folding.js';
import { IGNORED_NO_COPY, noCopyText, uncopiedReasonOf } from './reasons.js';
import { plainStyle, type LineStyle } from './style.js';

/** One changed path, as the observer reports it (`Change` in the session layer). */
export interface ReportChange {
  /** Project-relative, `/`-separated. */
  path: string;
  kind: 'changed' | 'created' | 'deleted';
  before?: PathState;
  after?: PathState;
}

/** What git could say about the files a turn deleted or emptied. */
export interface GitAnswer {
  /** Paths git was asked about and holds no copy of. */
  notInGit: ReadonlySet<string>;
  /** Paths that needed asking but were not answered (over the limit, or git failed). */
  unchecked: ReadonlySet<string>;
  /** Why `unchecked` is not empty, e.g. `git could not answer`. */
  uncheckedWhy?: string;
}

/** Everything the turn-end list is built from. Pure data: the CLI gathers it. */
export interface TurnEndInput {
  changes: readonly ReportChange[];
  gaps?: readonly Gap[];
  /** True when the picture the list compares against stopped early. */
  partial?: boolean;
  /** The observer's one-sentence summary of the gaps, used for the `checkpoint partial` note. */
  summary?: string;
  /** Git's answer for deleted/emptied files; omitted means git was not asked (nothing flagged `not in git`). */
  git?: GitAnswer;
  /** gitignore-style patterns whose change is flagged `protected`. @default [] */
  protected?: readonly string[];
  /**
   * Folders confirmed to be whole: every file they held went the same way. Only candidates in this
   * set collapse to one line; omitted means every candidate collapses (see {@link collapseCandidates}).
   */
  wholeFolders?: ReadonlySet<string>;
  /** Rows shown before `… and N more` (flagged rows always show). @default 10 */
  maxRows?: number;
  /** Deleted files at which every deletion is flagged `20+ deleted`. @default 20 */
  massDeleteThreshold?: number;
  /** Largest copied file, MiB, for `no copy (over N MiB)`. @default 100 */
  maxFileMib?: number;
  /** The undo command to offer. @default 'turnback undo' */
  undoCommand?: string;
  /** Entries the pictures left out by their coverage rules that the turn deleted (a folder ends with `/`): listed, with no copy. */
  ignoredDeleted?: readonly string[];
  /** Of those, how many more were deleted than `ignoredDeleted` names (a record keeps the first names only). */
  ignoredDeletedMore?: number;
}

/** A flag on a row: fixed rules, never heuristics. */
export type RowFlag = 'not in git' | '20+ deleted' | 'protected';

/** The word shown for a change kind. */
export type KindWord = 'changed' | 'new' | 'deleted';

/** One line of the list: a path, or a folder whose files all went the same way. */
export interface TurnEndRow {
  kind: KindWord;
  /** A file path, or a folder path ending in `/`. */
  path: string;
  /** Files this row stands for (1 for a file). */
  files: number;
  flags: RowFlag[];
  /** Lost files in this row that have no stored copy, and the reason words (of the first one). */
  noCopy?: { count: number; reason: string };
  /** The command that undoes this row, offered on flagged rows. */
  undo?: string;
  /** For a folder row flagged `not in git`: how many of its files git has no copy of. */
  notInGit?: number;
}

/** The turn-end list as data: what `--json` prints and what {@link renderTurnEndList} draws. */
export interface TurnEndList {
  counts: { changed: number; created: number; deleted: number };
  /** Rows shown, in order. */
  rows: TurnEndRow[];
  /** Files in rows that were not shown. */
  hidden: number;
  /** Those files by kind, for the line that stands for them. */
  hiddenByKind: { changed: number; created: number; deleted: number };
  /** Every gap, in words, so a partial list never reads as "nothing changed". */
  notes: string[];
  /** Entries the pictures left out (ignored, `skip`) that the turn deleted: no copy was kept (a folder ends with `/`). */
  ignoredDeleted?: string[];
  /** Of those, how many were not named under the row limit, the unnamed ones included. */
  ignoredDeletedHidden?: number;
  /** Of the hidden ones, how many no record names (`--all` cannot list them). */
  ignoredDeletedUnnamed?: number;
}

const KIND_ORDER: Record<ReportChange['kind'], number> = { changed: 0, created: 1, deleted: 2 };
const KIND_WORD: Record<ReportChange['kind'], KindWord> = { changed: 'changed', created: 'new', deleted: 'deleted' };
const UNCOPIED_REASONS = new Set(['too-large', 'credential', 'picture-budget', 'changed-during-capture', 'unreadable', 'store-busy', 'store-full']);

/** True for a change that loses content: a deletion, or a file emptied. */
export function isLoss(change: ReportChange): boolean {
  if (change.kind === 'deleted') return true;
  if (change.kind !== 'changed' || change.after === undefined) return false;
  const after = change.after;
  return (after.type === 'file' || after.type === 'uncopied') && after.size === 0;
}

/** The paths git should be asked about: deleted or emptied files, sorted. */
export function gitQuestionPaths(changes: readonly ReportChange[]): string[] {
  return changes
    .filter((c) => isLoss(c) && c.before !== undefined && (c.before.type === 'file' || c.before.type === 'uncopied'))
    .map((c) => c.path)
    .sort();
}

/** A folder every change under which has one kind: it may collapse to one line if it is whole. */
export interface CollapseCandidate {
  /** Folder path ending in `/`. */
  folder: string;
  kind: ReportChange['kind'];
  /** Changed files under it (recursively). */
  files: number;
}

/**
 * Folders (outermost first) whose changes, two or more, are all of one kind. The caller confirms
 * which are whole (no other files in them) and passes those as `wholeFolders`; a folder is only a
 * candidate when no changes of another kind sit anywhere below it.
 */
export function collapseCandidates(changes: readonly ReportChange[]): CollapseCandidate[] {
  const byFolder = new Map<string, { kinds: Set<ReportChange['kind']>; files: number }>();
  for (const change of changes) {
    const parts = change.path.split('/');
    for (let depth = 1; depth < parts.length; depth++) {
      const folder = `${parts.slice(0, depth).join('/')}/`;
      const known = byFolder.get(folder) ?? { kinds: new Set(), files: 0 };
      known.kinds.add(change.kind);
      known.files += 1;
      byFolder.set(folder, known);
    }
  }
  const out: CollapseCandidate[] = [];
  for (const [folder, info] of byFolder) {
    const [kind] = [...info.kinds];
    if (info.kinds.size === 1 && kind !== undefined && info.files >= 2) out.push({ folder, kind, files: info.files });
  }
  return out.sort((a, b) => depthOf(a.folder) - depthOf(b.folder) || compare(a.folder, b.folder));
}

/**
 * Builds the turn-end list: a counts line's numbers, the rows (folders collapsed, flags set, each
 * flagged row offering the undo that fixes it, a loss with no copy showing why instead), and notes
 * for every gap. Pure.
 */
export function buildTurnEndList(input: TurnEndInput): TurnEndList {
  const undoCommand = input.undoCommand ?? 'turnback undo';
  const maxRows = input.maxRows ?? 10;
  const threshold = input.massDeleteThreshold ?? 20;
  const maxFileMib = input.maxFileMib ?? DEFAULTS.maxFileMib;
  const changes = [...input.changes].sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || compare(a.path, b.path));
  const counts = { changed: 0, created: 0, deleted: 0 };
  for (const change of changes) counts[change.kind] += 1;
  const massDelete = counts.deleted >= threshold;
  const protectedMatcher = (input.protected ?? []).length > 0 ? ignore().add([...(input.protected ?? [])]) : undefined;

  const flagsOf = (change: ReportChange): RowFlag[] => {
    const flags: RowFlag[] = [];
    if (input.git?.notInGit.has(change.path) === true && isLoss(change)) flags.push('not in git');
    if (massDelete && change.kind === 'deleted') flags.push('20+ deleted');
    if (protectedMatcher?.ignores(change.path) === true) flags.push('protected');
    return flags;
  };

  // Collapse the outermost whole candidate; files inside it are not listed on their own.
  const collapsed: CollapseCandidate[] = [];
  for (const candidate of collapseCandidates(changes)) {
    if (input.wholeFolders !== undefined && !input.wholeFolders.has(candidate.folder)) continue;
    if (collapsed.some((outer) => candidate.folder.startsWith(outer.folder))) continue;
    collapsed.push(candidate);
  }

  const rows: TurnEndRow[] = [];
  const folderRows = new Map<string, { row: TurnEndRow; flagSet: Set<RowFlag>; noCopyReasons: string[]; notInGit: number }>();
  for (const change of changes) {
    const folder = collapsed.find((c) => change.path.startsWith(c.folder));
    const reason = isLoss(change) ? uncopiedReasonOf(change.before) : undefined;
    if (folder === undefined) {
      const row: TurnEndRow = { kind: KIND_WORD[change.kind], path: change.path, files: 1, flags: flagsOf(change) };
      if (reason !== undefined) row.noCopy = { count: 1, reason: noCopyText(reason, maxFileMib) };
      rows.push(row);
      continue;
    }
    let group = folderRows.get(folder.folder);
    if (group === undefined) {
      group = { row: { kind: KIND_WORD[folder.kind], path: folder.folder, files: 0, flags: [] }, flagSet: new Set(), noCopyReasons: [], notInGit: 0 };
      folderRows.set(folder.folder, group);
      rows.push(group.row);
    }
    group.row.files += 1;
    const flags = flagsOf(change);
    for (const flag of flags) group.flagSet.add(flag);
    if (flags.includes('not in git')) group.notInGit += 1;
    if (reason !== undefined) group.noCopyReasons.push(noCopyText(reason, maxFileMib));
  }
  for (const { row, flagSet, noCopyReasons, notInGit } of folderRows.values()) {
    row.flags = (['not in git', '20+ deleted', 'protected'] as const).filter((f) => flagSet.has(f));
    if (notInGit > 0 && notInGit < row.files) row.notInGit = notInGit;
    if (noCopyReasons.length > 0) row.noCopy = { count: noCopyReasons.length, reason: noCopyReasons[0] as string };
  }
  for (const row of rows) {
    if (row.flags.length === 0) continue;
    // A new protected file is not offered an undo: undo never deletes.
    if (row.kind === 'new') continue;
    // A loss with no copy at all shows its reason instead of an undo that cannot help.
    if (row.noCopy !== undefined && row.noCopy.count === row.files) continue;
    // A name that is not UTF-8 cannot be typed back through a command line (Node reads arguments
    // as UTF-8): its row offers the whole undo.
    row.undo = row.files === 1 && !row.path.endsWith('/') && !hasRawBytes(row.path) ? `${undoCommand} --path ${shellQuote(row.path)}` : undoCommand;
  }

  // Up to maxRows rows; flagged rows always show and take room first.
  let shown = rows;
  let hidden = 0;
  const hiddenByKind = { changed: 0, created: 0, deleted: 0 };
  const flagged = rows.filter((r) => r.flags.length > 0).length;
  const plain = rows.length - flagged;
  const plainShown = rowsShown(plain, Math.max(0, maxRows - flagged));
  if (plainShown < plain) {
    let room = plainShown;
    shown = rows.filter((r) => {
      if (r.flags.length > 0) return true;
      if (room > 0) {
        room -= 1;
        return true;
      }
      hidden += r.files;
      hiddenByKind[r.kind === 'new' ? 'created' : r.kind] += r.files;
      return false;
    });
  }

  // Under the same row limit: at least one is named, the rest counted.
  const ignoredAll = [...(input.ignoredDeleted ?? [])].sort(compare);
  const ignoredDeleted = ignoredAll.slice(0, rowsShown(ignoredAll.length, Math.max(1, maxRows - shown.length)));
  const unnamed = input.ignoredDeletedMore ?? 0;
  const ignoredMore = ignoredAll.length - ignoredDeleted.length + unnamed;
  return {
    counts,
    rows: shown,
    hidden,
    hiddenByKind,
    notes: notesFor(input, maxFileMib),
    ...(ignoredDeleted.length > 0 ? { ignoredDeleted } : {}),
    ...(ignoredMore > 0 ? { ignoredDeletedHidden: ignoredMore } : {}),
    ...(unnamed > 0 ? { ignoredDeletedUnnamed: unnamed } : {}),
  };
}

function notesFor(input: TurnEndInput, maxFileMib: number): string[] {
  const notes: string[] = [];
  const gaps = input.gaps ?? [];
  const pathless = gaps.filter((g) => g.path === undefined && g.reason !== 'store-busy');
  if (input.partial === true) {
    const why = input.summary !== undefined && input.summary.length > 0 ? input.summary : pathless.map((g) => g.detail).join('; ');
    notes.push(`checkpoint partial: ${why.length > 0 ? why : 'the picture stopped early'}; changes past it are not listed`);
  }
  // Per-file copy gaps become one summary line; every other gap is its own note.
  const uncopied = new Map<string, number>();
  const seen = new Set<string>();
  for (const gap of gaps) {
    if (input.partial === true && pathless.includes(gap)) continue;
    if (gap.reason === 'store-busy' && gap.path === undefined) {
      pushOnce(notes, seen, `no checkpoint: ${gap.detail}`);
    } else if (UNCOPIED_REASONS.has(gap.reason) && gap.path !== undefined) {
      uncopied.set(gap.reason, (uncopied.get(gap.reason) ?? 0) + 1);
    } else if (gap.reason === 'store-full') {
      pushOnce(notes, seen, `no checkpoint: ${gap.detail}`);
    } else {
      const shown = gap.path === undefined || gap.detail.includes(gap.path) ? gap.detail : `${gap.path}: ${gap.detail}`;
      pushOnce(notes, seen, `not checked: ${shown}`);
    }
  }
  if (uncopied.size > 0) {
    const parts = [...uncopied].map(([reason, n]) => `${n} ${n === 1 ? 'file' : 'files'} ${noCopyText(reason, maxFileMib)}`);
    notes.push(`not copied: ${parts.join(', ')}`);
  }
  const git = input.git;
  if (git !== undefined && git.unchecked.size > 0) {
    const n = git.unchecked.size;
    notes.push(`not checked against git: ${n} deleted or emptied ${n === 1 ? 'file' : 'files'}${git.uncheckedWhy !== undefined ? ` (${git.uncheckedWhy})` : ''}`);
  }
  // Cap the note count so a pathological turn cannot flood the terminal.
  if (notes.length > 8) {
    const extra = notes.length - 7;
    return [...notes.slice(0, 7), `… and ${extra} more notes (turnback show --json lists them)`];
  }
  return notes;
}

/** The counts line: `files: 2 changed, 1 new, 16 deleted`, or `files: none changed`. */
export function countsLine(counts: TurnEndList['counts']): string {
  const parts: string[] = [];
  if (counts.changed > 0) parts.push(`${counts.changed} changed`);
  if (counts.created > 0) parts.push(`${counts.created} new`);
  if (counts.deleted > 0) parts.push(`${counts.deleted} deleted`);
  return `files: ${parts.length > 0 ? parts.join(', ') : 'none changed'}`;
}

/**
 * Draws a {@link TurnEndList} as terminal lines:
 *
 * ```
 * files: 2 changed, 1 new, 16 deleted
 *   changed  src/parser.rs
 * ⚠ deleted  docs/notes/ (16 files)   not in git   turnback undo
 * ```
 */
export function renderTurnEndList(list: TurnEndList, style: LineStyle = plainStyle): string[] {
  // The turn's total is said once, here; a row's words speak of that row only.
  const massDelete = list.rows.some((row) => row.flags.includes('20+ deleted'));
  const lines = [massDelete ? `${countsLine(list.counts)}   ${style.warn(`⚠ ${list.counts.deleted} files deleted by one turn: each deletion is marked ⚠`)}` : countsLine(list.counts)];
  for (const row of list.rows) {
    const marker = row.flags.length > 0 ? style.warn('⚠ ') : '  ';
    const name = row.path.endsWith('/') ? `${shownPath(row.path)} (${row.files} files)` : shownPath(row.path);
    const tail: string[] = [];
    // `20+ deleted` is the turn's, said on the counts line; the ⚠ marks the row.
    const flagText = row.flags.filter((f) => f !== '20+ deleted').map((f) => (f === 'not in git' && row.notInGit !== undefined ? `not in git (${row.notInGit} of ${row.files})` : f));
    if (flagText.length > 0) tail.push(style.warn(flagText.join(', ')));
    if (row.noCopy !== undefined) {
      tail.push(row.files === 1 ? row.noCopy.reason : `${row.noCopy.count} of ${row.files} without a copy: ${row.noCopy.reason}`);
    }
    if (row.undo !== undefined) tail.push(style.bold(row.undo));
    lines.push(`${marker}${row.kind.padEnd(7)}  ${name}${tail.length > 0 ? `   ${tail.join('   ')}` : ''}`);
  }
  // Never pictured, so never a change with a copy: named all the same, each with why it is lost.
  for (const entry of list.ignoredDeleted ?? []) lines.push(`  ${'deleted'.padEnd(7)}  ${shownPath(entry)}   ${style.dim(IGNORED_NO_COPY)}`);
  const more = list.ignoredDeletedHidden ?? 0;
  // Past what a call record names (CALL_IGNORED_DELETED_MAX), `--all` has no names to give.
  const unnamed = list.ignoredDeletedUnnamed ?? 0;
  const where = unnamed === 0 ? '--all lists every one' : `${unnamed} of them not named in the checkpoint`;
  if (more > 0) lines.push(style.dim(`  … and ${more} more ignored ${more === 1 ? 'entry' : 'entries'} deleted, no copy was kept (${where})`));
  if (list.hidden > 0) {
    const by = list.hiddenByKind;
    lines.push(style.dim(`  ${moreLine([['changed', by.changed], ['new', by.created], ['deleted', by.deleted]])}`));
  }
  for (const note of list.notes) lines.push(style.dim(`note: ${shownText(note)}`));
  return lines;
}

/** Quotes a path for a command line only when it needs it. */
export function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function pushOnce(notes: string[], seen: Set<string>, note: string): void {
  if (seen.has(note)) return;
  seen.add(note);
  notes.push(note);
}

function depthOf(folder: string): number {
  return folder.split('/').length;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
