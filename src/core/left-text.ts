import type { LeftByLimit } from './model.js';
import { withThousands } from './numbers.js';

// One wording of what a stopped walk left, for the picture's summary, run's list, hooks and status.

/**
 * `12 folders not walked: untracked files in them not pictured (the 1,500 files git tracks there are)`:
 * how much a stopped walk left, as counts, for every command that reports it.
 */
export function leftText(left: LeftByLimit): string {
  const n = withThousands;
  const folders = `${n(left.folders)} folder${left.folders === 1 ? '' : 's'} not walked`;
  const them = left.folders === 1 ? 'it' : 'them';
  if (left.trackedPictured === undefined) return `${folders}: the files in ${them} are not pictured`;
  const missed = left.trackedMissed ?? 0;
  const tracked = missed > 0 ? `${n(missed)} files git tracks there not pictured either` : `the ${n(left.trackedPictured)} file${left.trackedPictured === 1 ? '' : 's'} git tracks there are`;
  return `${folders}: untracked files in ${them} not pictured (${tracked})`;
}
