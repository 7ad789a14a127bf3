import { gitBlobIdOf } from '../core/git-blob.js';
import type { CoverageCounts } from '../core/model.js';
import type { ResolvedCoverage } from './coverage.js';
import type { PictureRecord } from './picture.js';
import type { StatRecord } from './stat-record.js';
import { cleanTrackedBlob } from './tracked-files.js';

// What a picture's copy budget takes first, and what the picture counts of what it left out.

/**
 * When the copy budget cannot take every file, the files git does not hold go first: they have
 * no other copy. A clean tracked file past the budget then rests on git's blob (see `reserve`)
 * until a later picture copies it in. Stable, and in place; nothing moves when all fit.
 */
export function untrackedFirst(toCopy: StatRecord[], root: string, coverage: ResolvedCoverage): void {
  let bytes = 0;
  for (const stat of toCopy) bytes += stat.size;
  if (toCopy.length <= coverage.maxPictureFiles && bytes <= coverage.maxPictureBytes) return;
  const others: StatRecord[] = [];
  const tracked: StatRecord[] = [];
  for (const stat of toCopy) (cleanTrackedBlob(root, stat) !== undefined ? tracked : others).push(stat);
  let at = 0;
  for (const stat of others) toCopy[at++] = stat;
  for (const stat of tracked) toCopy[at++] = stat;
}

/** The picture's coverage by kind: one pass over its records. */
export function countCoverage(records: ReadonlyMap<string, PictureRecord>, ignored: number): CoverageCounts {
  let credential = 0;
  let tooLarge = 0;
  let onGit = 0;
  for (const record of records.values()) {
    const state = record.state;
    if (state.type === 'file' && gitBlobIdOf(state.object) !== undefined) onGit += 1;
    if (state.type !== 'uncopied') continue;
    if (state.reason === 'credential') credential += 1;
    else if (state.reason === 'too-large') tooLarge += 1;
  }
  return { files: records.size, ignored, credential, tooLarge, onGit };
}
