import { capturePath, type PathCaptureContext } from '../capture/capture-path.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { fingerprintOf, type PathState } from '../core/model.js';
import type { GuardSight, SwapDecision } from '../restore/apply.js';
import type { PlanEntry } from '../restore/plan.js';
import type { CheckpointWriter } from '../store/store.js';

// Every restore saves what it overwrites before it overwrites it, so the restore can itself be
// undone. The save of one path runs inside the apply, between its guard and its swap, from what
// the guard just read: a small file is read once for both, and what is saved is exactly what the
// guard checked.

/**
 * The pre-restore save of one entry, called by the apply between its guard and its swap with
 * what the guard read (`sight`). An absent path or a symlink is fully described by what was seen;
 * a small file's bytes go into the store under the guard's hash; a larger file is captured as by
 * `beforeWrite`, and refused if it no longer matches. The record is appended to `saver` before
 * the swap, so a crash after the swap still finds the original in the pre-restore checkpoint, and
 * the path is added to `saved`. A path that cannot be saved is left with a `cannot-save-first:`
 * reason.
 */
export async function saveBeforeSwap(capture: PathCaptureContext, saver: CheckpointWriter, saved: Set<string>, entry: PlanEntry, sight: GuardSight): Promise<SwapDecision> {
  let state: PathState;
  const seen = sight.state;
  if (seen.type === 'absent') {
    state = { type: 'absent' };
  } else if (seen.type === 'symlink') {
    state = { type: 'symlink', target: seen.target };
  } else if (seen.type === 'file' && sight.bytes !== undefined && sight.bytes.length <= capture.maxFileBytes) {
    try {
      // Raw: the save sits between a guard and its swap, where every microsecond widens the window.
      // `seen.hash` is the guard's xxh64 of these very bytes: not computed a second time.
      const ref = capture.store.putHashedSync(sight.bytes, seen.hash, { compress: false }) ?? (await capture.store.putHashed(sight.bytes, seen.hash, { compress: false }));
      state = { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: seen.mode, ...(seen.ino !== undefined ? { ino: seen.ino } : {}) };
    } catch (error) {
      const code = errnoCode(isCheckpointError(error) ? (error.cause ?? error) : error);
      return { leave: code === 'ENOSPC' || code === 'EDQUOT' ? 'cannot-save-first:store-full' : 'cannot-save-first:unreadable' };
    }
  } else {
    const captured = await capturePath(capture, entry.path);
    if (captured.state.type === 'uncopied') return { leave: `cannot-save-first:${captured.state.reason}` };
    state = captured.state;
    const found = fingerprintOf(state);
    if (found !== entry.expectedHash) return { refuse: found ?? 'unknown' };
  }
  await saver.append({ op: 'before', path: entry.path, state });
  saved.add(entry.path);
  return 'go';
}
