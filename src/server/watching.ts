import { closeWatchers, startWatchman, useWatchers, verifyWatchedProjects } from '../admin.js';

// The server's watchers (issue #28): the server keeps a watcher per project it serves, so a
// served picture asks "what changed since the last picture" instead of sweeping the tree; a
// command in its own process sweeps as before. `TURNBACK_WATCHER=off` turns it off. In idle time
// a verification sweep compares the last watcher-backed picture with a full walk (see
// src/capture/watch-verify.ts).

/** Idle time after which the verification sweep runs once (then waits for the next command). */
export const VERIFY_AFTER_IDLE_MS = 30_000;

/** Starts watching the projects this server pictures, unless `TURNBACK_WATCHER=off`. */
export async function startWatching(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (env.TURNBACK_WATCHER === 'off') return;
  await useWatchers((root) => startWatchman(root));
}

/** Stops every watcher (the server leaves). */
export function stopWatching(): Promise<void> {
  return closeWatchers();
}

/** A one-shot verification sweep once the server has been idle for {@link VERIFY_AFTER_IDLE_MS}; rearmed by {@link IdleVerification.arm}. */
export class IdleVerification {
  #timer: NodeJS.Timeout | undefined;

  /** Called whenever the server's activity changes: `idle` arms the sweep, anything else cancels it. */
  arm(idle: boolean): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (!idle) return;
    this.#timer = setTimeout(() => void verifyWatchedProjects(), VERIFY_AFTER_IDLE_MS);
    this.#timer.unref();
  }
}
