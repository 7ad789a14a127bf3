import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { isPidAlive } from '../core/pid.js';
import type { FileSystem } from '../fs/file-system.js';
import { HOSTNAME, FILE_MODE, type StoreLayout } from './layout.js';

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
    await fs.writeFile(file, JSON.stringify({ pid: process.pid, hostname: HOSTNAME, at: new Date().toISOString() }), { flag: 'wx', mode: FILE_MODE });
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
