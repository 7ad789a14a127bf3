import { realpathSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { closeWatchers, ownWatchman, startWatchman, useWatchers, verifyWatchedProjects, type OwnWatchman } from '../admin.js';
import { watcherFor, watchersInUse } from '../capture/watchers.js';
import type { ServiceStart } from './server.js';

// The server's watchers (issue #28): the server keeps a watcher per project it serves, so a
// served picture asks "what changed since the last picture" instead of sweeping the tree; a
// command in its own process sweeps as before. `TURNBACK_WATCHER=off` turns it off. In idle time
// a verification sweep compares the last watcher-backed picture with a full walk (see
// src/capture/watch-verify.ts). Its watchers ask a watchman service of the server's own (its
// files beside the server's socket, in the user's owner-only runtime folder), never the user's
// service, whose cookies go into `.git` (src/fs/watchman-service.ts); the server stops it when
// it leaves, also by a signal (an `exit` handler).

/** Idle time after which the verification sweep runs once (then waits for the next command). */
export const VERIFY_AFTER_IDLE_MS = 30_000;

/**
 * The folder of the server's watchman service, beside its socket: `<key>.w/` for `<key>.sock`, so
 * its socket (`<key>.w/sock`) is only 2 bytes longer than the server's, whose length is checked
 * against the system's limit (address.ts).
 */
export function watchmanFolder(socketPath: string): string {
  return `${socketPath.replace(/\.sock$/, '')}.w`;
}

/** The service this server started, once asked for. */
let service: Promise<OwnWatchman | undefined> | undefined;

/**
 * Starts watching the projects this server pictures, unless `TURNBACK_WATCHER=off`, with a
 * watchman service of its own in {@link watchmanFolder}, started by the first project's picture.
 */
export async function startWatching(socketPath: string, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  if (env.TURNBACK_WATCHER === 'off') return;
  let refusal: { refused: true; reason: 'not-installed' | 'stopped'; detail: string } | undefined;
  const serviceOnce = (): Promise<OwnWatchman | undefined> =>
    (service ??= ownWatchman(watchmanFolder(socketPath)).then((made) => {
      if ('refused' in made) {
        refusal = made;
        return undefined;
      }
      process.once('exit', () => made.kill());
      return made;
    }));
  await useWatchers(async (root) => {
    const own = await serviceOnce();
    if (own === undefined) return refusal ?? { refused: true, reason: 'stopped', detail: 'no watchman service' };
    return startWatchman(root, { sockname: own.sockname });
  });
}

/** The longest project root a hint may name (Linux's PATH_MAX). */
const MAX_HINTED_ROOT = 4096;

/**
 * Starts the watcher of the project a command in its own process is picturing
 * (src/server/watch-hint.ts), as that project's first served picture would, so watchman's crawl
 * runs beside that command. Only a canonical absolute path of an existing folder is taken, and
 * only while this server watches; anything else is ignored (false), nothing started.
 */
export function watchHinted(root: unknown): boolean {
  if (!watchersInUse() || typeof root !== 'string' || root.length > MAX_HINTED_ROOT || root.includes('\0') || !path.isAbsolute(root)) return false;
  try {
    if (!statSync(root).isDirectory() || realpathSync(root) !== root) return false;
  } catch {
    return false;
  }
  watcherFor(root);
  return true;
}

/** Stops every watcher and the server's watchman service (the server leaves). */
export async function stopWatching(): Promise<void> {
  await closeWatchers();
  const own = await service;
  service = undefined;
  own?.kill();
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

/** The watchers as one of the server's services: started with it, verified in its idle time, stopped when it leaves. */
export const watchingService: ServiceStart = async ({ life, socketPath }) => {
  await startWatching(socketPath);
  const verification = new IdleVerification();
  life.onActivity((idle) => verification.arm(idle && !life.left));
  return {
    async close() {
      verification.arm(false);
      await stopWatching();
    },
  };
};
