import { DEFAULTS } from '../core/defaults.js';
import type { PathState, UncopiedReason } from '../index.js';
import { shownPath } from './escape.js';


/**
 * The words shown for a file with no stored copy, e.g. `no copy (over 100 MiB)`. One table so
 * the turn-end list, the preview and the receipt always say the same thing.
 */
export function noCopyText(reason: UncopiedReason | string, maxFileMib: number = DEFAULTS.maxFileMib): string {
  switch (reason) {
    case 'too-large':
      return `no copy (over ${maxFileMib} MiB)`;
    case 'credential':
      return 'no copy (credential file)';
    case 'picture-budget':
      return 'no copy (picture budget)';
    case 'changed-during-capture':
      return 'no copy (changed during capture)';
    case 'unreadable':
      return 'no copy (unreadable)';
    case 'store-busy':
      return 'no copy (store busy)';
    case 'store-full':
      return 'no copy (store full)';
    default:
      return `no copy (${reason})`;
  }
}

/** Why a deleted entry the pictures passed over (ignored, `skip`) cannot come back: said on its row and in a hook's line. */
export const IGNORED_NO_COPY = 'ignored: no copy was kept';

/**
 * One phrase for the ignored entries a turn deleted, for a line that cannot hold rows (an agent
 * hook's message): `deleted debug.log, tmp/ (ignored: no copy was kept)`, the first `named`
 * names escaped and the rest counted. Empty when there are none.
 */
export function ignoredDeletedText(entries: readonly string[], more = 0, named = 3): string {
  const names = entries.slice(0, named).map((entry) => shownPath(entry));
  const rest = entries.length + more - names.length;
  if (names.length === 0 && rest === 0) return '';
  const counted = rest === 0 ? '' : names.length > 0 ? ` and ${rest} more` : `${rest} ${rest === 1 ? 'entry' : 'entries'}`;
  return `deleted ${names.join(', ')}${counted} (${IGNORED_NO_COPY})`;
}

/** The uncopied reason of a recorded state, or `undefined` when its bytes are kept (or it was absent). */
export function uncopiedReasonOf(state: PathState | undefined): UncopiedReason | undefined {
  return state?.type === 'uncopied' ? state.reason : undefined;
}

/**
 * The words for a plan reason (see `PlanReason` in restore/plan.ts), as shown after a path in a
 * preview or a receipt. Unknown reasons are shown verbatim rather than hidden.
 */
export function planReasonText(reason: string | undefined, maxFileMib: number = DEFAULTS.maxFileMib): string {
  if (reason === undefined) return '';
  if (reason.startsWith('no-copy:')) return noCopyText(reason.slice('no-copy:'.length), maxFileMib);
  if (reason.startsWith('cannot-save-first:')) {
    return `cannot save it first: ${noCopyText(reason.slice('cannot-save-first:'.length), maxFileMib)}`;
  }
  switch (reason) {
    case 'already-matches':
      return 'already as it was';
    case 'mode-only':
      return '(mode only)';
    case 'incomplete-attribution':
      return 'its change was not fully recorded';
    case 'no-post-record':
      return 'no record of its last change';
    case 'changed-outside':
      return 'changed since (your version is kept)';
    case 'changed-since-plan':
      return 'changed since the preview';
    case 'created-since':
      return '(created since)';
    case 'not-a-file':
      return 'was not a file';
    case 'directory-in-the-way':
      return 'a folder with other files is in the way (--delete-created removes files created since)';
    case 'file-in-the-way':
      return 'a new file stands where its folder was (--delete-created removes it)';
    case 'in-the-way':
      return '(it stands where a folder was; saved first)';
    case 'folder-in-the-way':
      return '(replaces the folder emptied by this undo)';
    case 'special-file-in-the-way':
      return 'a special file is in the way';
    case 'not-changed-since':
      return 'not changed since';
    case 'unreadable':
      return 'cannot be read now (left as it is)';
    case 'forced':
      return 'forced by name (what is there now is saved first)';
    case 'object-missing':
      return 'its stored copy is missing or damaged (turnback verify)';
    default:
      return reason;
  }
}
