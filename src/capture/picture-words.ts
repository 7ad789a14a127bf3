import type { LeftByLimit, PathState, UncopiedReason } from '../core/model.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { gitBlobIdOf } from '../core/git-blob.js';
import { withThousands } from '../core/numbers.js';
import { leftText } from '../core/left-text.js';
import type { ResolvedCoverage } from './coverage.js';
import type { BudgetStop, PictureRecord } from './picture.js';
import type { StatRecord, UncheckedPath } from './scan.js';

// A picture's small rules and words (picture.ts): which earlier record stands, a record's state,
// why a copy failed, and the one-line summary.

/**
 * True when an unchanged earlier record may stand as is: a stored copy (that checks out), a symlink, or a file that
 * is still not copied for a reason its unchanged stat cannot change. Files left by a budget or a
 * failed copy are tried again.
 */
export function settled(record: PictureRecord, coverage: ResolvedCoverage, intact?: (object: string) => boolean): boolean {
  const state = record.state;
  switch (state.type) {
    case 'file':
      // A file resting on git's blob is copied in by a later picture, within its budget. A copy
      // found missing or damaged is never pointed at again: the file is copied anew.
      return state.size === record.size && gitBlobIdOf(state.object) === undefined && (intact === undefined || intact(state.object));
    case 'symlink':
      return true;
    case 'uncopied':
      return (state.reason === 'credential' && !coverage.copyCredentials) || (state.reason === 'too-large' && record.size > coverage.maxFileBytes);
    default:
      return false;
  }
}

/**
 * Turns the scan's own record into a picture record in place: the scan result is private to
 * {@link takePicture}, and copying 100,000 records would double the peak memory of a picture.
 */
export function withState(stat: StatRecord, state: PathState): PictureRecord {
  const record = stat as PictureRecord;
  record.state = state;
  return record;
}

export function uncopiedState(reason: UncopiedReason, stat: StatRecord): PathState {
  return { type: 'uncopied', reason, size: stat.size, mode: stat.mode };
}

export const FAILURE_DETAIL: Record<UncopiedReason, string> = {
  'too-large': 'no copy (over the size limit)',
  credential: 'no copy (credential file)',
  'picture-budget': 'no copy (picture budget)',
  'changed-during-capture': 'no copy (changed during capture)',
  unreadable: 'no copy (unreadable)',
  'store-busy': 'no copy (the checkpoint store is busy)',
  'store-full': 'no copy (the checkpoint store is full)',
};

export function failureReason(error: unknown): UncopiedReason {
  if (isCheckpointError(error, 'CONFLICT')) return 'changed-during-capture';
  if (isCheckpointError(error, 'STORE_BUSY')) return 'store-busy';
  const code = errnoCode(error instanceof Error && error.cause !== undefined ? error.cause : error);
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'store-full';
  if (code === 'ENOENT') return 'changed-during-capture';
  return 'unreadable';
}

export function describeBudget(stops: Set<BudgetStop>, coverage: ResolvedCoverage): string {
  const parts: string[] = [];
  if (stops.has('files')) parts.push(`${withThousands(coverage.maxPictureFiles)} files`);
  if (stops.has('bytes')) parts.push(`${coverage.maxPictureMib} MiB`);
  if (stops.has('time')) parts.push(`${coverage.maxPictureSeconds} s`);
  return `copy budget (${parts.join(', ')})`;
}

const UNCHECKED_WORDS: Record<UncheckedPath['reason'], string> = {
  unreadable: 'unreadable',
  'unreadable-name': 'unreadable name',
  'gitignore-unusable': '.gitignore unusable',
  'too-deep': 'too deep',
  'walk-entries': 'walk limit',
  'time-limit': 'time limit',
};

/** Builds the one-line summary: what was copied, and the folders a limit left unchecked. */
export function summarize(total: number, copied: number, partial: boolean, unchecked: UncheckedPath[], left: LeftByLimit | undefined): string {
  if (!partial) return `checkpoint: ${withThousands(total)} file${total === 1 ? '' : 's'}, ${withThousands(copied)} copied`;
  const parts: string[] = [];
  parts.push(`${withThousands(copied)} copied`);
  let sentence = `checkpoint partial: ${parts.join(', ')}`;
  if (unchecked.length > 0) {
    // One clause per reason, so a walk stopped with 800 folders left stays one readable line.
    const byReason = new Map<UncheckedPath['reason'], string[]>();
    for (const u of unchecked) {
      const list = byReason.get(u.reason) ?? [];
      list.push(u.path === '.' ? 'the project' : `${u.path}/`);
      byReason.set(u.reason, list);
    }
    const clauses = [...byReason].map(([reason, list]) =>
      list.length === 1 ? `${list[0]} (${UNCHECKED_WORDS[reason]})` : `${withThousands(list.length)} folders (${UNCHECKED_WORDS[reason]}) such as ${list[0]}`,
    );
    sentence += `; not checked: ${clauses.join(', ')}`;
  }
  if (left !== undefined) sentence += ` — ${leftText(left)}`;
  return sentence;
}
