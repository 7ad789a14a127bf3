import { isCheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import { parseCheckpointId, type CheckpointId } from '../core/id.js';
import { fingerprintOf, type Fingerprint, type PathState } from '../core/model.js';
import { isSameProcessAlive, processStartTime } from '../core/pid.js';
import { readDiskState, type DiskState } from '../fs/disk-state.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import { resolveInsideRoot, toProjectPath } from '../fs/paths.js';
import { applyRestore } from '../restore/apply.js';
import { planRestore, type PlanInput } from '../restore/plan.js';
import { tempNameBase } from '../restore/transaction.js';
import type { JournalRecord } from '../store/journal.js';
import type { CheckpointStore } from '../store/store.js';
import { storeBehind, type StoreView } from '../store/view.js';

// What a restore killed mid-apply (SIGKILL, a crash, a power cut) leaves is put right by the next
// process that opens the store: the files it had written back are rolled back to what its save
// recorded just before each swap, its stage and displaced files are removed, and its save is
// sealed as a restore that changed nothing. Rolled back, not resumed: the person never saw the
// restore finish, may have looked at or edited the tree since, and the state before it is the one
// every byte of which the save holds; the same undo is one command away, and now needs no --force.

/** State documents that record an apply in progress. */
export const APPLYING_STATE_PREFIX = 'applying-';

/** What a restore records before its first stage (`state/applying-<pid>-<base>.json`). */
export interface ApplyingRecord {
  pid: number;
  /** The process's start time ({@link processStartTime}): a reused pid is not the writer. */
  startTime?: string;
  /** The name base of its stage and displaced files. */
  base: string;
  /** The project folders it writes in (`''` for the root). */
  folders: string[];
  /** Its pre-restore save, and what it restores to. */
  save?: CheckpointId;
  restoreOf?: CheckpointId;
  /** The save's label (`before undo of …`), said in the notice. */
  label?: string;
  /** Every path it was to write, with the fingerprint it was to leave there. */
  writes?: [string, Fingerprint][];
}

/** The record of an apply about to start in this process. */
export function applyingRecord(fields: Omit<ApplyingRecord, 'pid' | 'startTime' | 'base'>): { name: string; record: ApplyingRecord } {
  const startTime = processStartTime(process.pid);
  return {
    name: `${APPLYING_STATE_PREFIX}${process.pid}-${tempNameBase()}`,
    record: { pid: process.pid, ...(startTime !== undefined ? { startTime } : {}), base: tempNameBase(), ...fields },
  };
}

/** One interrupted restore, as the process that put it right found and left it. */
export interface RecoveredRestore {
  /** The save of the killed restore (sealed now), when it had one. */
  save?: CheckpointId;
  restoreOf?: CheckpointId;
  label?: string;
  /** Paths it was to write. */
  planned: number;
  /** Of those, how many it had written when it died (now rolled back). */
  written: number;
  /** True when its apply had finished (only its cleanup was cut): nothing was rolled back. */
  finished: boolean;
  /** Paths that were changed since by someone else, left as they are. */
  kept: string[];
  /** Paths the rollback could not write back (their original is in the save). */
  failed: string[];
  /** Its `.turnback-stage-*` and `.turnback-displaced-*` files removed from the project. */
  removedLeftovers: string[];
}

function parseRecord(value: unknown): ApplyingRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.pid !== 'number' || typeof r.base !== 'string' || !/^[0-9a-f]{12}$/.test(r.base)) return undefined;
  const folders = Array.isArray(r.folders) ? r.folders.filter((f): f is string => typeof f === 'string') : [];
  const id = (v: unknown): CheckpointId | undefined => {
    try {
      return typeof v === 'string' ? parseCheckpointId(v) : undefined;
    } catch {
      return undefined;
    }
  };
  const writes = Array.isArray(r.writes) ? r.writes.filter((w): w is [string, string] => Array.isArray(w) && typeof w[0] === 'string' && typeof w[1] === 'string') : undefined;
  const save = id(r.save);
  const restoreOf = id(r.restoreOf);
  return {
    pid: r.pid,
    ...(typeof r.startTime === 'string' ? { startTime: r.startTime } : {}),
    base: r.base,
    folders,
    ...(save !== undefined ? { save } : {}),
    ...(restoreOf !== undefined ? { restoreOf } : {}),
    ...(typeof r.label === 'string' ? { label: r.label } : {}),
    ...(writes !== undefined ? { writes } : {}),
  };
}

/** Names of records of restores whose process is gone (cheap: one listing of `state/`). */
export async function deadApplyingRecords(store: CheckpointStore): Promise<string[]> {
  const dead: string[] = [];
  for (const name of await store.listState(APPLYING_STATE_PREFIX).catch(() => [] as string[])) {
    const record = parseRecord(await store.readState(name).catch(() => undefined));
    if (record !== undefined && (record.pid === process.pid || isSameProcessAlive(record.pid, record.startTime))) continue;
    dead.push(name);
  }
  return dead;
}

/**
 * Rolls back every restore whose process died mid-apply and removes what it left in the project
 * (never a name of a live process's restore, never a name it did not make). The caller holds the
 * store lock.
 */
export async function recoverInterruptedRestoresLocked(store: CheckpointStore, fs: FileSystem): Promise<RecoveredRestore[]> {
  const recovered: RecoveredRestore[] = [];
  for (const name of await deadApplyingRecords(store)) {
    const record = parseRecord(await store.readState(name).catch(() => undefined));
    if (record !== undefined) recovered.push(await recoverOne(store, fs, record));
    await store.deleteState(name).catch(() => undefined);
  }
  return recovered;
}

async function recoverOne(store: CheckpointStore, fs: FileSystem, record: ApplyingRecord): Promise<RecoveredRestore> {
  const result: RecoveredRestore = {
    ...(record.save !== undefined ? { save: record.save } : {}),
    ...(record.restoreOf !== undefined ? { restoreOf: record.restoreOf } : {}),
    ...(record.label !== undefined ? { label: record.label } : {}),
    planned: record.writes?.length ?? 0,
    written: 0,
    finished: false,
    kept: [],
    failed: [],
    removedLeftovers: [],
  };
  if (record.save !== undefined) await rollBack(store, fs, record, record.save, result);
  result.removedLeftovers = await removeLeftovers(fs, store.projectRoot, record);
  return result;
}

/**
 * Puts back what the save recorded for every path the killed restore may have written: a path
 * that holds what the restore was to write, or nothing (killed between moving the original aside
 * and publishing), is written back; one that still holds what was saved is left; anything else was
 * changed since by someone else and is kept. Then the save is sealed with each path's state now.
 */
async function rollBack(store: CheckpointStore, fs: FileSystem, record: ApplyingRecord, save: CheckpointId, result: RecoveredRestore): Promise<void> {
  let manifest;
  try {
    manifest = await store.manifest(save);
  } catch {
    return;
  }
  // Sealed, or its closing records are down: the apply had ended; only its cleanup was cut short.
  if (manifest.complete || manifest.entries.some((entry) => entry.after !== undefined)) {
    result.finished = true;
    result.written = result.planned;
    if (!manifest.complete && manifest.entries.every((entry) => entry.after !== undefined)) await store.sealLeftOpen(save, []).catch(() => undefined);
    return;
  }
  await loadHasher();
  const intended = new Map(record.writes ?? []);
  const projectRoot = store.projectRoot;
  const inputs: PlanInput[] = [];
  const disks = new Map<string, DiskState>();
  for (const entry of manifest.entries) {
    let disk: DiskState;
    try {
      disk = await readDiskState(fs, projectRoot, entry.path);
    } catch {
      result.failed.push(entry.path);
      continue;
    }
    disks.set(entry.path, disk);
    const now = fingerprintOf(disk);
    const saved = fingerprintOf(entry.before);
    const wrote = now !== undefined && now !== saved && (now === intended.get(entry.path) || now === 'absent');
    if (wrote) result.written += 1;
    // The guard: only what the killed restore itself left is overwritten.
    const lastAfter = wrote || now === saved ? now : (intended.get(entry.path) ?? saved);
    inputs.push({ path: entry.path, target: entry.before, ...(lastAfter !== undefined ? { lastAfter } : {}), disk });
  }
  const plan = planRestore(inputs, { created: 'delete', modePolicy: 'exact' });
  for (const entry of plan) if (entry.action === 'refuse' || entry.action === 'leave') result.kept.push(entry.path);
  const applied = await applyRestore({ fs, projectRoot, readObject: (object) => store.readObject(object) }, plan);
  result.failed.push(...applied.failed.map((failure) => failure.path));
  // Each path's record says what is there now: the saved state where the rollback wrote it or
  // found it, the other writer's where it was kept. The save then changed nothing.
  const closing: JournalRecord[] = [];
  for (const entry of manifest.entries) {
    const disk = disks.get(entry.path);
    const backNow = applied.restored.some((e) => e.path === entry.path) || (disk !== undefined && fingerprintOf(disk) === fingerprintOf(entry.before));
    const after = backNow ? fingerprintOf(entry.before) : disk !== undefined ? fingerprintOf(disk) : undefined;
    if (after !== undefined) closing.push({ op: 'after', path: entry.path, after, ...(modeOf(entry.before) !== undefined && backNow ? { afterMode: modeOf(entry.before) as number } : {}) });
  }
  try {
    await store.sealLeftOpen(save, closing, { complete: false });
  } catch (error) {
    if (!isCheckpointError(error)) throw error;
  }
}

function modeOf(state: PathState): number | undefined {
  return state.type === 'file' ? state.mode : undefined;
}

/** Removes the stage and displaced files named with the record's base, in the folders it lists. */
async function removeLeftovers(fs: FileSystem, projectRoot: string, record: ApplyingRecord): Promise<string[]> {
  const removed: string[] = [];
  const ours = (file: string): boolean => file.startsWith(`.turnback-stage-${record.base}`) || file.startsWith(`.turnback-displaced-${record.base}`);
  for (const folder of record.folders) {
    let projectFolder: string;
    try {
      projectFolder = folder === '' ? '' : toProjectPath(projectRoot, folder);
      // Never through a link: every folder on the way must still be a real folder inside the root.
      if (projectFolder !== '') await resolveInsideRoot(fs, projectRoot, `${projectFolder}/x`);
    } catch {
      continue;
    }
    const abs = projectFolder === '' ? projectRoot : `${projectRoot}/${projectFolder}`;
    for (const file of await fs.readdir(abs).catch(() => [] as string[])) {
      if (!ours(file)) continue;
      const rel = projectFolder === '' ? file : `${projectFolder}/${file}`;
      await fs.unlink(`${abs}/${file}`).then(() => removed.push(rel), () => undefined);
    }
  }
  return removed.sort();
}

/**
 * What the `turnback` command runs each time it opens a store (list, status, every hook event,
 * undo…): {@link recoverInterruptedRestoresLocked} when a dead process's record is there — one
 * listing of `state/` otherwise. A store busy with another process's work is left for the next
 * command (`busy`); any other failure comes back as `problem`, for the caller to say. Never throws.
 */
export async function recoverInterruptedRestores(view: StoreView): Promise<{ recovered: RecoveredRestore[]; busy?: true; problem?: string }> {
  const store = storeBehind(view);
  try {
    if ((await deadApplyingRecords(store)).length === 0) return { recovered: [] };
    return { recovered: await store.withLock(() => recoverInterruptedRestoresLocked(store, nodeFileSystem), { timeoutMs: 0 }) };
  } catch (error) {
    if (isCheckpointError(error, 'STORE_BUSY')) return { recovered: [], busy: true };
    return { recovered: [], problem: error instanceof Error ? error.message : String(error) };
  }
}
