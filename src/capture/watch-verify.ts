import type { TreeWatcher } from '../fs/tree-watcher.js';
import type { ResolvedCoverage } from './coverage.js';
import type { PictureRecord } from './picture.js';
import { scanTree, type StatRecord, type UncheckedPath } from './scan.js';
import type { WatchedPictures } from './watched-picture.js';
import { noteVerification, watchedProjects } from './watchers.js';

// The verification sweep: in idle time, a full walk of the tree (today's sweep, no memo, no
// watcher) compared with the last watcher-backed picture. A path that differs and that the
// watcher did not report as changed since that picture — before the walk or during it — is a
// disagreement: it is counted (`turnback status` shows the count and the last one) and the
// keeper's token is forgotten, so the next picture is a full sweep.

/** What one verification sweep needs. */
export interface VerifyInput {
  root: string;
  coverage: ResolvedCoverage;
  exclude: readonly string[];
  watcher: TreeWatcher;
  watched: WatchedPictures;
}

function sameStat(a: StatRecord, b: StatRecord): boolean {
  return a.type === b.type && a.size === b.size && a.mode === b.mode && a.mtimeMs === b.mtimeMs && a.ino === b.ino && a.target === b.target;
}

/** True when `p` or a folder above it is in `set`. */
function coveredBy(p: string, set: ReadonlySet<string>): boolean {
  if (set.has(p)) return true;
  for (let slash = p.lastIndexOf('/'); slash > 0; slash = p.lastIndexOf('/', slash - 1)) if (set.has(p.slice(0, slash))) return true;
  return false;
}

function unchecked(list: readonly UncheckedPath[]): Set<string> {
  return new Set(list.map((u) => (u.path === '.' ? '' : u.path)));
}

/**
 * Runs one verification sweep; returns the paths the watcher missed, or `undefined` when there
 * was nothing to verify (no watcher-backed picture, or the watcher cannot vouch right now).
 */
export async function verifyWatched(input: VerifyInput): Promise<string[] | undefined> {
  const { root, coverage, exclude, watcher, watched } = input;
  const last = watched.last;
  if (last === undefined) return undefined;
  const before = await watcher.changesSince(last.token);
  if (!before.vouched) return undefined;
  const sweep = await scanTree(root, coverage, { exclude });
  const after = await watcher.changesSince(before.token);
  if (!after.vouched) return undefined;
  const reported = new Set([...before.paths, ...after.paths]);
  const skip = new Set([...unchecked(last.picture.unchecked), ...unchecked(sweep.unchecked)]);
  if (skip.has('')) return undefined;
  const pictured: ReadonlyMap<string, PictureRecord> = last.picture.records;
  const missed: string[] = [];
  const seen = new Set<string>();
  for (const record of sweep.list) {
    seen.add(record.path);
    const earlier = pictured.get(record.path);
    if ((earlier === undefined || !sameStat(earlier, record)) && !coveredBy(record.path, reported) && !coveredBy(record.path, skip)) missed.push(record.path);
  }
  for (const p of pictured.keys()) if (!seen.has(p) && !coveredBy(p, reported) && !coveredBy(p, skip)) missed.push(p);
  noteVerification(root, missed);
  if (missed.length > 0) watched.forget();
  return missed;
}

/**
 * One verification sweep of every project this process watches (the command server calls it in
 * idle time); resolves to the disagreements found. Never rejects: a sweep that fails is simply
 * not counted.
 */
export async function verifyWatchedProjects(): Promise<number> {
  let found = 0;
  for (const { watcher, watched } of watchedProjects()) {
    try {
      found += (await verifyWatched({ root: watched.root, coverage: watched.coverage, exclude: watched.exclude, watcher, watched }))?.length ?? 0;
    } catch {
      // Not counted: the next idle time tries again.
    }
  }
  return found;
}
