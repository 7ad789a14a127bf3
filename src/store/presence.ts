import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { CheckpointError } from '../core/errors.js';
import { isPidAlive } from '../core/pid.js';
import type { FileSystem } from '../fs/file-system.js';
import { HOSTNAME, FILE_MODE, STORE_VERSION, type StoreLayout } from './layout.js';

/**
 * Which processes have the store open: each open store leaves `state/presence-<pid>-<hex>.json`
 * (its pid and host) until it closes. A capture may dedupe against any object before its journal
 * line is down, even before its turn's journal exists, so a prune asked for a shortened grace
 * period keeps the full one while any other process has the store open (a dead process's file
 * on this host does not count, and prune removes it).
 */
export const PRESENCE_PREFIX = 'presence-';

/** A presence from another host counts for this long (its pid cannot be checked from here). */
const OTHER_HOST_PRESENCE_MS = 24 * 60 * 60 * 1000;

/** Records this process's presence; best effort (a read-only store cannot be written, nor captured into). */
export async function markPresence(fs: FileSystem, layout: StoreLayout): Promise<string | undefined> {
  const file = path.join(layout.stateDir, `${PRESENCE_PREFIX}${process.pid}-${randomBytes(4).toString('hex')}.json`);
  try {
    // `layout`: which layout this process reads and writes (an upgrade waits for older ones, below).
    await fs.writeFile(file, JSON.stringify({ pid: process.pid, hostname: HOSTNAME, at: new Date().toISOString(), layout: STORE_VERSION }), { flag: 'wx', mode: FILE_MODE });
    return file;
  } catch {
    return undefined;
  }
}

/** Removes a presence {@link markPresence} left. */
export async function clearPresence(fs: FileSystem, file: string | undefined): Promise<void> {
  if (file !== undefined) await fs.unlink(file).catch(() => undefined);
}

/**
 * Refuses an upgrade of the layout while a live process of older code has the store open: it read
 * the version when it opened the store, cannot read what the newer layout writes, and its prune
 * could not see what those files reference (a presence without `layout`, or an older one, is
 * older code's; a torn one is not counted: it would block the upgrade for good).
 *
 * @throws CheckpointError `STORE_BUSY` naming the process.
 */
export async function refuseUpgradeUnderOlderCode(fs: FileSystem, layout: StoreLayout, from: number): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(layout.stateDir);
  } catch {
    return;
  }
  for (const name of names.filter((candidate) => candidate.startsWith(PRESENCE_PREFIX))) {
    let doc: { pid?: unknown; hostname?: unknown; at?: unknown; layout?: unknown };
    try {
      doc = JSON.parse(await fs.readFile(path.join(layout.stateDir, name), 'utf8')) as typeof doc;
    } catch {
      continue;
    }
    if (typeof doc.pid !== 'number' || typeof doc.hostname !== 'string' || doc.pid === process.pid) continue;
    if (typeof doc.layout === 'number' && doc.layout >= STORE_VERSION) continue;
    const live = doc.hostname === HOSTNAME ? isPidAlive(doc.pid) : typeof doc.at === 'string' && Date.now() - Date.parse(doc.at) < OTHER_HOST_PRESENCE_MS;
    if (live) {
      throw new CheckpointError('STORE_BUSY', `an older turnback (pid ${doc.pid} on ${doc.hostname}) has this store open; it is upgraded from layout ${from} to ${STORE_VERSION} once that process has closed it`, {
        path: layout.root,
      });
    }
  }
}

/**
 * True when a process other than this one has the store open now. Presence files of dead
 * processes on this host are removed on the way.
 */
export async function otherProcessHasStoreOpen(fs: FileSystem, layout: StoreLayout, now: number = Date.now()): Promise<boolean> {
  let names: string[];
  try {
    names = await fs.readdir(layout.stateDir);
  } catch {
    return false;
  }
  let open = false;
  for (const name of names.filter((candidate) => candidate.startsWith(PRESENCE_PREFIX))) {
    const file = path.join(layout.stateDir, name);
    let doc: { pid?: unknown; hostname?: unknown; at?: unknown };
    try {
      doc = JSON.parse(await fs.readFile(file, 'utf8')) as typeof doc;
    } catch {
      // Being written, or torn by a crash: count it (being wrong costs only disk space until later).
      open = true;
      continue;
    }
    if (typeof doc.pid !== 'number' || typeof doc.hostname !== 'string') continue;
    if (doc.hostname !== HOSTNAME) {
      if (typeof doc.at === 'string' && now - Date.parse(doc.at) < OTHER_HOST_PRESENCE_MS) open = true;
      continue;
    }
    if (doc.pid === process.pid) continue;
    if (isPidAlive(doc.pid)) open = true;
    else await fs.unlink(file).catch(() => undefined);
  }
  return open;
}
