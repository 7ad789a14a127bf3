import type { ParallelLstat } from '../fs/parallel-lstat.js';
import type { StatRecord } from './stat-record.js';

// What a scan keeps per folder between scans (in memory only), and the one stat batch a repeat
// scan of settled folders takes.

export interface FolderMemo {
  /** Per listing position, the record the scan kept (undefined: not a covered file). */
  records: (StatRecord | undefined)[];
  /** Name → record, built only when a later listing comes back in a different order. */
  byName?: Map<string, StatRecord>;
  /**
   * The folder's listing. A later scan takes the folder's entries from here instead of listing it
   * when the listing is settled, or when a watcher vouches the folder is unchanged.
   */
  listing?: SettledListing;
  /** Entries of the folder the ignore rules (and `skip`) left out when it was listed; a folder ends with `/`. */
  ignored?: string[];
  /**
   * No record of the folder needs the picture's attention again (`ScanOptions.quiet`, scan-types.ts):
   * noted the first time a change-set walk takes the folder unchanged, dropped whenever its
   * records change. A watcher-vouched folder that is quiet is carried without a look at a record.
   */
  quiet?: boolean;
  /** The `ScanOptions.quietEpoch` that `quiet` was found under: under another one it is asked again. */
  quietEpoch?: string;
  /**
   * Whether the folder's whole subtree can be carried by a change-set walk that touches nothing
   * under it (subtree-carry.ts), found under `epochs`; forgotten whenever a walk visits the folder.
   */
  whole?: WholeNote;
}

/**
 * What carrying a folder's whole subtree adds to a walk, as the visits it stands for would: the
 * memo of each folder (in the walk's order), the entries the walk limit counts, the ignored names.
 */
export interface WholeSubtree {
  /** The folder's project path, the very string the memo's map is keyed by. */
  rel: string;
  memo: FolderMemo;
  /** The subfolders' summaries, in listing order. */
  children: WholeSubtree[];
  /** Entries a walk of the subtree counts against the walk limit (each folder's {@link SettledListing.entries}). */
  entries: number;
  /** Folders in the subtree, the folder itself included. */
  folders: number;
  /** Ignored names the subtree's folders hold, in all. */
  ignoredNames: number;
}

/** A folder's note about its subtree: the summary, or that it cannot be carried; valid under `epochs` only. */
export type WholeNote = { carryable: true; whole: WholeSubtree; epochs: string } | { carryable: false; epochs: string };

/**
 * What a folder listing held when the folder had not changed for {@link LISTING_SETTLE_MS}: while
 * the folder keeps that mtime and inode, its entries are the same names (creating, removing or
 * renaming an entry always sets a folder's mtime). The covered files are the memo's `records`.
 */
export interface SettledListing {
  /** The folder's mtime and inode when listed. */
  mtimeMs: number;
  ino: number;
  /**
   * Entries the listing held, each one the walk limit counts (covered or not, the folder's own
   * `.git` too): a walk reusing the listing counts what listing it again would.
   */
  entries: number;
  /** Subfolders walked, in listing order. */
  subfolders: string[];
  /** A `.gitignore` was listed. */
  hasGitignore: boolean;
  /** A `.git` entry was listed. */
  hasGit: boolean;
  /** Whether the project was a git repository: it decides which dependency folders are walked. */
  inRepository: boolean;
  /** The folder's mtime lay {@link LISTING_SETTLE_MS} before the listing: reusable without a watcher. */
  settled: boolean;
}

/**
 * How long a folder's mtime must lie before the moment it was listed for the listing to be kept
 * for reuse. A change made just after the listing could otherwise land in the same timestamp tick
 * (kernel clocks tick every few milliseconds; some file systems keep 1 or 2 s) and leave the mtime
 * as it was. The racy-timestamp rule of git's index, with a wide margin.
 */
export const LISTING_SETTLE_MS = 3000;

/**
 * What the last scan saw per folder, kept across scans so a repeat scan finds each file's earlier
 * record by its position in the folder listing (listings of an unchanged folder come back in the
 * same order) instead of building and hashing its full path. Valid only for the records map it
 * was bound to: a scan uses it only when `previous` is that very map.
 */
export class ScanMemo {
  #folders = new Map<string, FolderMemo>();
  #generation = 0;
  #boundTo: ReadonlyMap<string, StatRecord> | undefined;
  /** The paths the last scan took from git's index under ignored folders (`undefined`: not known, e.g. restored). */
  #beyond: readonly string[] | undefined;
  #scope: string | undefined;
  #revision = 0;
  /** The folders came from an earlier process ({@link ScanMemo.restore}) and no scan used them yet. */
  #restored = false;
  /** Grows at every walk that may change a folder's records unseen by the subtree notes ({@link FolderMemo.whole}). */
  #carryEpoch = 0;

  /** The epoch subtree notes are valid in (see {@link ScanMemo.forgetCarries}). */
  get carryEpoch(): number {
    return this.#carryEpoch;
  }

  /**
   * @internal Makes every folder's subtree note stale: a walk that is not a carrying change-set
   * walk (a sweep) may change records anywhere, and does not forget the notes folder by folder.
   */
  forgetCarries(): void {
    this.#carryEpoch++;
  }

  /**
   * @internal Starts a scan: returns its generation and the folders to read, if `previous`
   * matches and the scan covers the same way (`scope` names the root, coverage and exclusions).
   */
  begin(previous: ReadonlyMap<string, StatRecord> | undefined, scope: string): { generation: number; folders: Map<string, FolderMemo> | undefined; restored: boolean; beyond: readonly string[] | undefined } {
    const folders = previous !== undefined && previous === this.#boundTo && scope === this.#scope ? this.#folders : undefined;
    const beyond = folders !== undefined ? this.#beyond : undefined;
    const restored = this.#restored && folders !== undefined;
    this.#restored = false;
    this.#scope = scope;
    // Any scan that starts invalidates the binding until its own picture binds again.
    this.#boundTo = undefined;
    return { generation: ++this.#generation, folders, restored, beyond };
  }

  /**
   * @internal Ends a scan: keeps its folders when no later scan started meanwhile. `relisted`:
   * some folder was listed afresh, so what a later process could reuse may differ. `beyond`: the
   * paths the scan took from git's index under ignored folders (none of the folders holds them).
   */
  end(generation: number, folders: Map<string, FolderMemo>, relisted: boolean, beyond: readonly string[]): boolean {
    if (generation !== this.#generation) return false;
    if (relisted || folders.size !== this.#folders.size) this.#revision++;
    this.#folders = folders;
    this.#beyond = beyond;
    return true;
  }

  /**
   * @internal Ends a change-set walk that kept every folder of `folders` (the ones its
   * {@link ScanMemo.begin} handed out), each visited or carried whole: `visited` (the folders it
   * looked into, new ones too) are set in place, sparing a map of every folder per walk. As
   * {@link ScanMemo.end} otherwise; false, changing nothing, when a later scan started meanwhile.
   */
  endKeeping(generation: number, folders: Map<string, FolderMemo>, visited: ReadonlyMap<string, FolderMemo>, relisted: boolean, beyond: readonly string[]): boolean {
    if (generation !== this.#generation || folders !== this.#folders) return false;
    const before = folders.size;
    for (const [rel, known] of visited) folders.set(rel, known);
    if (relisted || folders.size !== before) this.#revision++;
    this.#beyond = beyond;
    return true;
  }

  /** Grows whenever a scan kept folders that may differ from the ones before (see {@link ScanMemo.end}). */
  get revision(): number {
    return this.#revision;
  }

  /** The folders the last scan kept, and the scope it covered (for persisting; see scan-index.ts). */
  get kept(): { folders: ReadonlyMap<string, FolderMemo>; scope: string | undefined } {
    return { folders: this.#folders, scope: this.#scope };
  }

  /**
   * Starts a memo no scan used yet from folders an earlier process kept, bound to `records` (the
   * stat cache the folders' records come from) for a scan covering `scope`. Returns false, and
   * changes nothing, once a scan has used the memo.
   */
  restore(folders: Map<string, FolderMemo>, records: ReadonlyMap<string, StatRecord>, scope: string): boolean {
    if (this.#generation !== 0) return false;
    this.#folders = folders;
    this.#boundTo = records;
    this.#scope = scope;
    this.#beyond = undefined;
    this.#restored = true;
    return true;
  }

  /**
   * Binds the memo to the records map a picture built from scan `generation` (each record there
   * is the object that scan produced). A later scan started in between wins: nothing is bound.
   */
  bind(generation: number | undefined, records: ReadonlyMap<string, StatRecord>): void {
    if (generation !== undefined && generation === this.#generation) this.#boundTo = records;
  }
}

/** The stats of every listed folder of the memo and of its files, taken in one two-thread batch. */
export interface ListedBatch {
  stats: Float64Array;
  /** Where each folder's entry starts in `stats` (in paths; its records follow in memo order). */
  at: Map<FolderMemo, number>;
}

/**
 * One stat batch (two threads when the helper runs) for the folder and the files of every folder
 * the memo holds a listing of; `undefined` when too few paths to be worth it. A settled listing is
 * then reused with these stats; a folder listed afresh (its listing not settled yet, or its mtime
 * changed) still reads its names, and takes each one's stat from the batch where the name is the
 * record the last listing had at that position. A big tree's batch goes window after window
 * (ParallelLstat.lstatAll), so its size has no upper bound.
 */
export async function prefetchListed(root: string, folders: ReadonlyMap<string, FolderMemo>, parallel: ParallelLstat): Promise<ListedBatch | undefined> {
  let count = 0;
  for (const known of folders.values()) if (known.listing !== undefined) count += 1 + known.records.length;
  if (count < parallel.minBatchPaths) return undefined;
  // The project paths themselves (strings the memo holds already), not absolute copies of them.
  const rels: string[] = [];
  const at = new Map<FolderMemo, number>();
  for (const [rel, known] of folders) {
    if (known.listing === undefined) continue;
    at.set(known, rels.length);
    rels.push(rel);
    for (const record of known.records) if (record !== undefined) rels.push(record.path);
  }
  return { stats: await parallel.lstatAll(root, rels), at };
}

