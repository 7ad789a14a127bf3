import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { gitBlobIdOf, gitObjectKey, isGitBlob, isGitObjectKey } from '../core/git-blob.js';
import type { CoverageCounts, LeftByLimit, PathState } from '../core/model.js';
import type { ResolvedCoverage } from './coverage.js';
import type { PictureChange, PictureRecord } from './picture.js';
import { FileRecord, type StatRecord } from './stat-record.js';
import { cleanTrackedBlobIs, cleanTrackedEntries } from './tracked-files.js';
import { pictureChange } from './picture-change.js';

// What a picture's copy budget takes first, and what the picture counts of what it left out.

/**
 * When the copy budget cannot take every file: a clean tracked file the store has never pictured
 * is taken out of `toCopy` and returned, its state already its blob id — it rests on git's objects, and the
 * picture costs a stat sweep and an index read, not a copy of the tree (the store copies such
 * blobs in outside pictures, `CheckpointStore.copyGitBlobsIn`, and later pictures reuse the record
 * while its stat holds); and of the rest, the files git does not hold go first (they have no other
 * copy), then the clean tracked files pictured before (changed since), resting on git if the
 * budget cannot take them.
 * Stable, in place; nothing moves and nothing is returned when every file fits.
 */
export function orderForBudget(
  toCopy: StatRecord[],
  root: string,
  coverage: ResolvedCoverage,
  previous: ReadonlyMap<string, PictureRecord> | undefined,
): PictureRecord[] {
  let bytes = 0;
  for (const stat of toCopy) bytes += stat.size;
  if (toCopy.length <= coverage.maxPictureFiles && bytes <= coverage.maxPictureBytes) return [];
  const others: StatRecord[] = [];
  const tracked: StatRecord[] = [];
  // Records, not {stat, blob} pairs: a first picture of a big tree rests most of its files on git,
  // and a pair and an id string per file, live through this pass, were ~20 MiB of promoted
  // garbage in the stretch where the server's memory peaks (issue #28).
  const restOnGit: PictureRecord[] = [];
  // git's index looked at once for the whole list: asked per record, each answer stats `.git`
  // and the index file again (3.3 s of a 250,000-file first picture, profiled).
  const entryOf = cleanTrackedEntries(root);
  for (const stat of toCopy) {
    const entry = entryOf(stat);
    if (entry === undefined) others.push(stat);
    else if (previous?.get(stat.path) === undefined) {
      // The same text, the kept index's own string: one copy of the path for both (the record's own stays only in the scan's short-lived lists).
      stat.path = entry.path;
      // In place, as the picture turns every scan record into its record (picture-copy.ts withState).
      const record = stat as PictureRecord;
      record.state = blobState(stat, entry.blob);
      restOnGit.push(record);
    } else tracked.push(stat);
  }
  let at = 0;
  for (const stat of others) toCopy[at++] = stat;
  for (const stat of tracked) toCopy[at++] = stat;
  toCopy.length = at;
  return restOnGit;
}

/**
 * For one picture: true when a record resting on git's blob may stand as it is — git's index
 * still names that very blob for the path, clean by git's rule for the record's stat. An index
 * entry keeps its blob from any `git gc`, so the pre-image cannot be lost while it holds; once the
 * index lets go (the file untracked, staged otherwise, or a history rewrite that moved it), the
 * picture copies the file, whose bytes then exist nowhere else.
 */
export function restingCheck(root: string): (record: PictureRecord) => boolean {
  const indexBlobIs = cleanTrackedBlobIs(root);
  return (record) => {
    // The key read without making the state object: asked of every unchanged record resting on git.
    const key = record instanceof FileRecord ? record.objectKey : record.state.type === 'file' ? record.state.object : undefined;
    return isGitObjectKey(key) && indexBlobIs(record, key, 'git:'.length);
  };
}

/** The state of a file recorded by its git blob id instead of a copy: its bytes rest on git's objects. */
export function blobState(stat: StatRecord, blob: string): PathState {
  const key = gitObjectKey(blob);
  return { type: 'file', object: key, hash: key, size: stat.size, mode: stat.mode & 0o7777, ino: stat.ino };
}

/**
 * The counts by kind of each records map counted: a picture's map is never changed once built,
 * and a watcher-vouched picture with no change is the last picture's very map, so a call pair on
 * an unchanged tree counts once, not once per call (a pass over 250,000 records costs ~100 ms).
 */
const countedKinds = new WeakMap<ReadonlyMap<string, PictureRecord>, Kinds>();

type Kinds = { credential: number; tooLarge: number; onGit: number };

/**
 * The picture's coverage by kind: once per records map, from the counts of the map it was built
 * over and the paths that changed when that map was counted (`change`, else
 * `pictureChange(records)`), else one pass over its records.
 */
export function countCoverage(records: ReadonlyMap<string, PictureRecord>, ignored: number, left?: LeftByLimit, change?: PictureChange): CoverageCounts {
  let kinds = countedKinds.get(records);
  if (kinds === undefined) {
    const from = change ?? pictureChange(records);
    const earlier = from !== undefined ? countedKinds.get(from.from) : undefined;
    if (from !== undefined && earlier !== undefined) {
      kinds = { ...earlier };
      for (const p of from.paths) {
        count(kinds, from.from.get(p), -1);
        count(kinds, records.get(p), 1);
      }
    } else {
      kinds = { credential: 0, tooLarge: 0, onGit: 0 };
      for (const record of records.values()) count(kinds, record, 1);
    }
    countedKinds.set(records, kinds);
  }
  return { files: records.size, ignored, ...kinds, ...(left !== undefined ? { left: { ...left } } : {}) };
}

/** Adds `by` to the count of `record`'s kind, if it is one counted. */
function count(kinds: Kinds, record: PictureRecord | undefined, by: 1 | -1): void {
  // A file state kept by its key is neither kind of uncopied: only whether it rests on git counts.
  if (record instanceof FileRecord && record.repeatsStat) {
    if (isGitObjectKey(record.objectKey)) kinds.onGit += by;
    return;
  }
  const state = record?.state;
  if (state === undefined) return;
  if (state.type === 'file' && gitBlobIdOf(state.object) !== undefined) kinds.onGit += by;
  if (state.type !== 'uncopied') return;
  if (state.reason === 'credential') kinds.credential += by;
  else if (state.reason === 'too-large') kinds.tooLarge += by;
}

/**
 * The state of a file whose earlier record rested on git's blob and whose stat moved since (a
 * rewrite, a `touch`, a checkout of the same content): when its bytes are still that very blob,
 * the blob record stands with the new stat, so the rewrite is not read as a change; `undefined`
 * otherwise (the file is then copied as any changed file). Reads the file only in that case.
 */
export function stillTheSameBlob(root: string, previous: PictureRecord | undefined, stat: StatRecord): PathState | undefined {
  const state = previous?.state;
  if (state?.type !== 'file' || stat.type !== 'file' || state.size !== stat.size) return undefined;
  const blob = gitBlobIdOf(state.object);
  if (blob === undefined) return undefined;
  if (previous !== undefined && previous.mtimeMs === stat.mtimeMs && previous.ino === stat.ino) return undefined;
  let bytes: Buffer;
  let fd: number | undefined;
  try {
    // Never through a link: the path was a regular file when statted, and must still be one.
    fd = nodeFs.openSync(path.join(root, ...stat.path.split('/')), nodeFs.constants.O_RDONLY | nodeFs.constants.O_NOFOLLOW);
    bytes = nodeFs.readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) nodeFs.closeSync(fd);
  }
  if (bytes.length !== stat.size || !isGitBlob(bytes, blob)) return undefined;
  return { type: 'file', object: state.object, hash: state.hash, size: stat.size, mode: stat.mode & 0o7777, ino: stat.ino };
}
