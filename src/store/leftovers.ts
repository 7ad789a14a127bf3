import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import { isPidAlive } from '../core/pid.js';
import { isTurnbackTempName, type FileSystem } from '../fs/file-system.js';
import { scanCatalog } from './catalog.js';
import { parseJournal } from './journal.js';
import { readManifest } from './manifests.js';
import type { CheckpointId } from '../core/id.js';
import { GRACE_MS, HOSTNAME, readJsonIfExists, tempNamePid } from './layout.js';
import { otherProcessHasStoreOpen } from './presence.js';
import { MADE_FOLDERS_PREFIX } from './state-documents.js';
import type { StoreContext } from './retention.js';

// What prune removes besides checkpoints and objects: the leftovers of interrupted writes.

/**
 * Removes what interrupted writes leave behind: temp files of dead writers (or older than the
 * grace period), interrupted atomic writes in `checkpoints/` and `state/`, journals left beside
 * their sealed manifest by a seal cut short, and lock files set aside by a lock break.
 */
export async function removeLeftovers(ctx: StoreContext, now: number): Promise<number> {
  const { fs, layout } = ctx;
  let freed = 0;
  const removeIf = async (file: string, decide: (mtimeMs: number) => boolean): Promise<void> => {
    try {
      const stats = await fs.lstat(file);
      if (!stats.isFile() || !decide(stats.mtimeMs)) return;
      await fs.unlink(file);
      freed += stats.size;
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove leftover', file);
    }
  };
  const old = (mtimeMs: number): boolean => now - mtimeMs >= GRACE_MS;
  for (const name of await listNames(fs, layout.tmpDir)) {
    const pid = isTurnbackTempName(name) ? tempNamePid(name) : undefined;
    const deadWriter = pid !== undefined && pid !== process.pid && !isPidAlive(pid);
    await removeIf(path.join(layout.tmpDir, name), (mtimeMs) => deadWriter || old(mtimeMs));
  }
  const catalog = await scanCatalog(fs, layout);
  for (const stray of catalog.strays) await removeIf(stray, old);
  for (const entry of catalog.entries) {
    if (!entry.sealed || !entry.journal) continue;
    const file = layout.journalPath(entry.id);
    const header = parseJournal((await readJsonIfExists(fs, file)) ?? '').header;
    const alive = header !== undefined && header.hostname === HOSTNAME && isPidAlive(header.pid);
    // A manifest that does not parse beside it (a power loss after an unfsynced seal): the
    // journal is the checkpoint's only whole record, kept.
    if (!alive && (await manifestParses(ctx, entry.id))) await removeIf(file, () => true);
  }
  const ids = new Set<string>(catalog.entries.map((entry) => entry.id));
  for (const name of await listNames(fs, layout.stateDir)) {
    if (!name.endsWith('.json')) await removeIf(path.join(layout.stateDir, name), old);
    // The folders a restore made, kept for its save's redo: gone with the save.
    else if (name.startsWith(MADE_FOLDERS_PREFIX) && !ids.has(name.slice(MADE_FOLDERS_PREFIX.length, -'.json'.length))) await removeIf(path.join(layout.stateDir, name), () => true);
  }
  const packNames = new Set(await listNames(fs, layout.packsDir));
  for (const name of packNames) {
    // An index whose pack is gone: a prune cut short between deleting the two.
    if (name.endsWith('.idx') && !packNames.has(`${name.slice(0, -'.idx'.length)}.pack`)) await removeIf(path.join(layout.packsDir, name), old);
  }
  for (const name of await listNames(fs, layout.root)) {
    if (name.startsWith('store.lock.stale-')) await removeIf(path.join(layout.root, name), old);
  }
  // Presence files of processes that died without closing the store: the scan removes them.
  await otherProcessHasStoreOpen(fs, layout, now);
  return freed;
}

/** True when the sealed manifest of `id` reads and parses. */
async function manifestParses(ctx: StoreContext, id: CheckpointId): Promise<boolean> {
  try {
    return (await readManifest(ctx.fs, ctx.layout, id, ctx.projectRoot)) !== undefined;
  } catch {
    return false;
  }
}

/** A folder's names, or none when it does not exist. */
export async function listNames(fs: FileSystem, dir: string): Promise<string[]> {
  try {
    return await fs.readdir(dir);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return [];
    throw asCheckpointError(error, 'cannot list', dir);
  }
}
