import { fingerprintOf, type PathState } from '../core/model.js';
import { pictureChange, type PictureRecord } from './picture.js';

/** One path that differs between two pictures. */
export interface Change {
  /** Project-relative path. */
  path: string;
  /** `created`: only in `after`; `deleted`: only in `before`; `changed`: in both, different. */
  kind: 'changed' | 'created' | 'deleted';
  /** The earlier state (absent for `created`). */
  before?: PathState;
  /** The later state (absent for `deleted`). */
  after?: PathState;
}

/** A record as {@link diffPictures} reads it: a state plus, when known, the stat it was taken with. */
export interface DiffRecord {
  state: PathState;
  size?: number;
  mode?: number;
  mtimeMs?: number;
  ino?: number;
}

/** What {@link diffPictures} needs from a picture: a `Picture` is one. */
export interface PictureLike {
  /** Records keyed by project path. */
  readonly records: ReadonlyMap<string, DiffRecord>;
  /** Paths the picture did not check (`'.'` is the whole project); nothing under them is new or deleted. */
  readonly unchecked?: readonly { path: string }[];
  /**
   * Paths under `unchecked` folders that were checked all the same (tracked files statted from
   * git's index): such a path with no record is gone.
   */
  readonly vouched?: ReadonlySet<string>;
  /** Entries the walk passed over by the coverage rules (a folder ends with `/`), when the picture kept their names. */
  readonly ignoredPaths?: readonly string[];
}

/**
 * Lists what changed from `before` to `after`, sorted by path. Pure.
 *
 * A path under a folder either picture left unchecked is never reported created or deleted
 * (its presence there is unknown), unless that picture vouches for it ({@link PictureLike.vouched}). Two records with the same stat (size, mtime, inode, mode) are
 * unchanged without looking further; otherwise content fingerprints decide, and a changed mode
 * or type counts as a change. When a side's content is unknown (an uncopied file with no hash)
 * and its stat moved, the path is reported changed: unknown is not the same as unchanged.
 *
 * `only`, when given, names every path whose record may differ between the two maps — at every
 * other path both hold the same record object, or neither holds one (see {@link changedPathsBetween}):
 * the diff then visits those paths alone, and gives what the full comparison gives.
 */
export function diffPictures(before: PictureLike, after: PictureLike, only?: Iterable<string>): Change[] {
  const beforeUnchecked = uncheckedSet(before);
  const afterUnchecked = uncheckedSet(after);
  if (only !== undefined) return diffPaths(before, after, only, beforeUnchecked, afterUnchecked);
  const changes: Change[] = [];
  for (const [path, next] of after.records) {
    const previous = before.records.get(path);
    if (previous === undefined) {
      if (!isUnder(beforeUnchecked, path) || before.vouched?.has(path) === true) changes.push({ path, kind: 'created', after: next.state });
      continue;
    }
    if (differs(previous, next)) changes.push({ path, kind: 'changed', before: previous.state, after: next.state });
  }
  for (const [path, previous] of before.records) {
    if (after.records.has(path) || (isUnder(afterUnchecked, path) && after.vouched?.has(path) !== true)) continue;
    changes.push({ path, kind: 'deleted', before: previous.state });
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** {@link diffPictures} over the paths `only` names (each once, in any order). */
function diffPaths(before: PictureLike, after: PictureLike, only: Iterable<string>, beforeUnchecked: Set<string>, afterUnchecked: Set<string>): Change[] {
  const changes: Change[] = [];
  for (const path of new Set(only)) {
    const previous = before.records.get(path);
    const next = after.records.get(path);
    if (next !== undefined) {
      if (previous === undefined) {
        if (!isUnder(beforeUnchecked, path) || before.vouched?.has(path) === true) changes.push({ path, kind: 'created', after: next.state });
      } else if (differs(previous, next)) changes.push({ path, kind: 'changed', before: previous.state, after: next.state });
    } else if (previous !== undefined && !(isUnder(afterUnchecked, path) && after.vouched?.has(path) !== true)) {
      changes.push({ path, kind: 'deleted', before: previous.state });
    }
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** How many pictures back {@link changedPathsBetween} follows a map's changes: past it the full comparison is as cheap. */
const CHANGE_HOPS_MAX = 8;

/**
 * The paths at which `to`'s records may not be `from`'s own objects, when `to` was built over
 * `from` by consecutive pictures (each one's map over the one before, `pictureChange`): the union
 * of the changes along the way. `undefined` when `to` does not lead back to `from` within a few
 * pictures, or the changes grow past an eighth of the map — then only the full comparison can tell.
 */
export function changedPathsBetween(from: ReadonlyMap<string, PictureRecord>, to: ReadonlyMap<string, PictureRecord>): Set<string> | undefined {
  const paths = new Set<string>();
  let map = to;
  for (let hop = 0; map !== from; hop++) {
    const change = hop < CHANGE_HOPS_MAX ? pictureChange(map) : undefined;
    if (change === undefined) return undefined;
    for (const path of change.paths) paths.add(path);
    if (paths.size > Math.max(64, to.size / 8)) return undefined;
    map = change.from;
  }
  return paths;
}

/**
 * The entries `before`'s walk passed over (ignored, `skip`, default skipped folders) that `after`'s
 * walk no longer finds, sorted: deleted with no copy, which no record can say. Empty when either
 * picture did not keep the names. An entry under a folder `after` left unchecked is not gone (its
 * presence is unknown), nor one `after` pictures (its rules changed), nor one `before` pictured
 * (a tracked file the rules ignore: the diff reports it). Pure.
 */
export function ignoredGone(before: PictureLike, after: PictureLike): string[] {
  if (before.ignoredPaths === undefined || after.ignoredPaths === undefined || before.ignoredPaths.length === 0) return [];
  const still = new Set(after.ignoredPaths);
  const afterUnchecked = uncheckedSet(after);
  // Passed over as part of a folder now (the rules changed): not gone.
  const afterFolders = new Set(after.ignoredPaths.filter((e) => e.endsWith('/')).map((e) => e.slice(0, -1)));
  const gone: string[] = [];
  for (const entry of before.ignoredPaths) {
    if (still.has(entry)) continue;
    const path = entry.endsWith('/') ? entry.slice(0, -1) : entry;
    if (before.records.has(path) || after.records.has(path) || isUnder(afterUnchecked, path) || isUnder(afterFolders, path)) continue;
    gone.push(entry);
  }
  // A folder now walked (its rules changed) has records under it: its files are not a loss.
  if (gone.some((e) => e.endsWith('/'))) {
    const walked = new Set<string>();
    for (const path of after.records.keys()) for (let slash = path.indexOf('/'); slash > 0; slash = path.indexOf('/', slash + 1)) walked.add(path.slice(0, slash + 1));
    return gone.filter((e) => !walked.has(e)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
  return gone.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function differs(a: DiffRecord, b: DiffRecord): boolean {
  // Pictures reuse the earlier record object for an unchanged file: the common case costs nothing.
  if (a === b) return false;
  // A file copied by a later picture (uncopied before, file now) with the same stat is unchanged.
  if (a.mtimeMs !== undefined && a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino && a.mode === b.mode && kindOf(a.state) === kindOf(b.state)) {
    return a.state.type === 'symlink' && b.state.type === 'symlink' ? a.state.target !== b.state.target : false;
  }
  const x = a.state;
  const y = b.state;
  if (stateMode(x) !== stateMode(y)) return true;
  const fx = fingerprintOf(x);
  const fy = fingerprintOf(y);
  if (fx !== undefined && fy !== undefined) return fx !== fy;
  // Content unknown on one side: only an identical stat could have proven it unchanged.
  return true;
}

function kindOf(state: PathState): string {
  return state.type === 'uncopied' ? 'file' : state.type;
}

function stateMode(state: PathState): number | undefined {
  return state.type === 'file' || state.type === 'uncopied' ? state.mode : undefined;
}

function uncheckedSet(picture: PictureLike): Set<string> {
  return new Set((picture.unchecked ?? []).map((u) => u.path));
}

/** True when `path` is, or is inside, one of `folders`. Walks the path's ancestors: O(depth). */
function isUnder(folders: Set<string>, path: string): boolean {
  if (folders.size === 0) return false;
  if (folders.has('.') || folders.has(path)) return true;
  for (let slash = path.lastIndexOf('/'); slash > 0; slash = path.lastIndexOf('/', slash - 1)) {
    if (folders.has(path.slice(0, slash))) return true;
  }
  return false;
}
