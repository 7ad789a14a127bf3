import type * as nodeFs from 'node:fs';
import type { Gap, LeftByLimit } from '../core/model.js';
import type { ParallelLstat } from '../fs/parallel-lstat.js';
import type { IgnoreFrame, IgnoreStack } from './coverage.js';
import type { FolderMemo, ScanMemo } from './scan-memo.js';
import type { StatRecord } from './stat-record.js';

// The shapes of one walk (scan.ts): what it is asked, what it returns, and what one folder adds.

/**
 * Why a path was not checked. `unreadable`: listing failed; `unreadable-name`: a name that is not
 * valid UTF-8; `gitignore-unusable`: its `.gitignore` cannot be used whole; `too-deep`: past
 * `maxDepth`; `walk-entries` / `time-limit`: the walk stopped at that limit before reaching it.
 */
export type UncheckedReason = 'unreadable' | 'unreadable-name' | 'gitignore-unusable' | 'too-deep' | 'walk-entries' | 'time-limit';

/** A folder (or file) the walk did not check. Nothing under it may be called new or deleted. */
export interface UncheckedPath {
  /** Project-relative path; `'.'` is the whole project. */
  path: string;
  /** Why it was not checked. */
  reason: UncheckedReason;
}

/** The stat index of a project tree. */
export interface ScanResult {
  /** Every covered file and symlink, in walk order. */
  list: StatRecord[];
  /** Every covered file and symlink, keyed by project path (built from `list` when first read). */
  readonly entries: Map<string, StatRecord>;
  /** Folders and files not checked, with reasons. */
  unchecked: UncheckedPath[];
  /** What was not covered and why; never silent. */
  gaps: Gap[];
  /** True when anything was left unchecked: the index must not be read as the whole tree. */
  partial: boolean;
  /**
   * Tracked paths under folders a stopped walk left that were statted from git's index, found or
   * gone: such a path with no record is deleted, though its folder is unchecked.
   */
  vouched?: ReadonlySet<string>;
  /** What a walk stopped by a limit left, when it stopped. */
  left?: LeftByLimit;
  /** Folder entries listed. */
  walked: number;
  /** Entries the ignore rules, `skip` and the default skipped folders left out; a folder ends with `/` and counts once. */
  ignored: string[];
  /** The `ignores.epoch` when the scan ended (pass it back as `previousEpoch`). */
  ignoreEpoch: number;
  /** The `memo` generation this scan wrote, for {@link ScanMemo.bind}; `undefined` when it wrote none. */
  memoGeneration: number | undefined;
  /**
   * Set when the walk carried `previous` (a change-set walk with {@link ScanOptions.quiet}): `list`
   * then holds only the records of the folders it looked into (and the tracked files under ignored
   * folders), and every other record of `previous` stands as is, except `dropped`: the paths of
   * `previous` that may be gone (each one in `list` is not). `wholeFolders`: the folders taken
   * without a visit, in subtrees no change lay under (subtree-carry.ts).
   */
  carried?: { dropped: readonly string[]; wholeFolders: number };
}

/** Options of one {@link scanTree} call. */
export interface ScanOptions {
  /** Aborts the walk: the returned promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Epoch milliseconds after which the walk stops and leaves the rest unchecked.
   * @default Date.now() + coverage.maxPictureSeconds * 1000
   */
  deadline?: number;
  /** Absolute paths never walked (the store, when it sits inside the project). */
  exclude?: readonly string[];
  /** A stack kept across scans, so unchanged `.gitignore` files are not parsed again. */
  ignores?: IgnoreStack;
  /**
   * An earlier index of the same tree. A file whose lstat still matches its earlier record (and
   * `reuse` allows it) is returned as that very object, so an unchanged tree allocates nothing
   * per file. With `previousEpoch` equal to `ignores.epoch`, a file recorded earlier in a folder
   * whose `.gitignore` chain is unchanged is not matched against the rules again.
   */
  previous?: ReadonlyMap<string, StatRecord>;
  /** The `ignores.epoch` at the end of the scan that produced `previous`. */
  previousEpoch?: number;
  /** Per-folder listings kept across scans (see {@link ScanMemo}). */
  memo?: ScanMemo;
  /** Whether an unchanged earlier record may be returned as is. @default always */
  reuse?: (record: StatRecord) => boolean;
  /**
   * Two-thread `lstat` for repeat scans of big trees: the files and folders of every settled
   * listing are statted in one batch before the walk. Repeat scans of a tree of 2,048–50,000
   * paths count toward starting its helper thread. Changes only the speed of a scan, never its
   * result.
   */
  parallel?: ParallelLstat;
  /**
   * Lists one folder. For tests only (e.g. a folder that turns unreadable: tests run as root,
   * where `chmod 000` hides nothing). @default `fs.readdirSync(path, { withFileTypes: true })`
   */
  readDir?: (absPath: string) => nodeFs.Dirent[];
  /**
   * The string a long-lived holder already keeps for a path, or the path itself (a picture passes
   * git's kept index's own, see `trackedPathSharer`): a record made fresh takes it instead of the
   * walk's copy of the same text. Changes only memory, never a result.
   */
  sharedPath?: (path: string) => string;
  /**
   * What a watcher vouched changed since `previous` was pictured (see {@link VouchedChanges}): a
   * folder and a file it does not name are taken from `memo` without a stat. Used only with a
   * memo bound to `previous`; otherwise the walk is the usual sweep.
   */
  changes?: VouchedChanges;
  /**
   * With `changes`: true for a record of `previous` that needs no attention again while its stat
   * holds (`reuse` would take it as is). A folder the watcher vouches for whose records all are
   * quiet is carried: its records are not listed in the result (see {@link ScanResult.carried}).
   */
  quiet?: (record: StatRecord) => boolean;
  /**
   * What `quiet`'s answers rest on besides each record's own unchanged stat (a picture passes the
   * identity of git's index: a record resting on git's blob is quiet while that index names the
   * blob). A folder found quiet under another epoch is asked again, record by record.
   */
  quietEpoch?: string;
}

/**
 * A watcher's vouched change set, as the walk uses it. `paths`: every changed path. `dirty`: the
 * folders whose listing may differ (each changed path's folder, and the path itself). `replaced`:
 * paths created or removed since the token; a folder among them (one renamed in or out, or made
 * anew) is walked whole, as a full sweep walks it, trusting nothing under it.
 */
export interface VouchedChanges {
  paths: ReadonlySet<string>;
  dirty: ReadonlySet<string>;
  replaced: ReadonlySet<string>;
}

/** What one folder added to a scan. */
export interface FolderOutcome {
  /** Covered files and symlinks, in listing order. */
  found: StatRecord[];
  /** Subfolders to walk, in listing order. */
  subfolders: PendingFolder[];
  /** Entries that could not be recorded. */
  problems: UncheckedPath[];
  /** The folder's memo for the next scan, when a memo is kept. */
  memo: FolderMemo | undefined;
  /** Entries the ignore rules left out (a folder ends with `/`). */
  ignored: string[];
}

export interface PendingFolder {
  abs: string;
  rel: string;
  depth: number;
  frame: IgnoreFrame | undefined;
  /** A vouched change set holds for this folder (see {@link VouchedChanges}). */
  trusted: boolean;
  /** The ignore rules the folder is walked with are the very ones the last walk used (its parent's were). */
  frameSame?: boolean;
}

