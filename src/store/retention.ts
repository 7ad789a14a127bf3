import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { checkpointIdTime, type CheckpointId } from '../core/id.js';
import type { FileSystem } from '../fs/file-system.js';
import { isPidAlive } from '../core/pid.js';
import { otherProcessHasStoreOpen } from './presence.js';
import { GRACE_MS, HOSTNAME, type StoreLayout } from './layout.js';
import { COMPRESS_MIN_BYTES, parseObjectKey } from './object-codec.js';
import { isBlockableKey } from './pack-format.js';
import type { ObjectStore } from './objects.js';
import { PACK_FRESH_MS, diskShare, readPackHeader, type PackFile } from './packs.js';
import { isOpenInThisProcess } from './pack-writer.js';
import { removeLeftovers } from './leftovers.js';
import { loadReferences, stateReferences, type Held } from './references.js';

export { stateReferences } from './references.js';

/** What the store layer's maintenance steps (prune, verify) need from a store. Internal. */
export interface StoreContext {
  fs: FileSystem;
  layout: StoreLayout;
  objects: ObjectStore;
  projectRoot: string;
  withLock<T>(fn: () => Promise<T>): Promise<T>;
  storeSizeBytes(): Promise<number>;
}

/** Options of `prune`. */
export interface PruneOptions {
  /** Keep at most this many checkpoints. @default DEFAULT_RETAIN (100) */
  retain?: number;
  /** Remove checkpoints older than this many days. @default no age limit */
  keepDays?: number;
  /** Remove the oldest checkpoints while the store is larger than this. @default no size limit */
  maxStoreBytes?: number;
  /**
   * Unreferenced objects younger than this are kept, because a concurrent capture may be about to
   * reference them. Pass 0 only when no capture can be running (e.g. forgetting a session).
   * @default GRACE_MS (10 minutes)
   */
  graceMs?: number;
  /**
   * Say what would go and change nothing: the checkpoints `retain` and `keepDays` would clear
   * and the unreferenced objects past the grace period (their bytes are an upper bound: a pack
   * is rewritten only when enough of it is garbage). The store cap (`maxStoreBytes`) is not
   * simulated: what it clears depends on what each removal frees. @default false
   */
  dryRun?: boolean;
}

/** Why prune removed a checkpoint. */
export type PruneReason = 'retain' | 'keep-days' | 'store-full';

/** What `prune` did. */
export interface PruneReport {
  /** Removed checkpoints, sorted by id. */
  removedCheckpoints: CheckpointId[];
  /** Number of objects removed (keys of which no copy is left, loose or packed). */
  removedObjects: number;
  /** Bytes freed (manifests, journals, objects, temp files). */
  freedBytes: number;
  /** Each removed checkpoint with the rule that removed it. */
  cleared: { id: CheckpointId; reason: PruneReason }[];
  /**
   * The grace period garbage collection used, ms: the one asked for, or the default when a
   * shorter one was asked while another live session had a checkpoint open (it may have
   * deduplicated against any object in the store).
   */
  graceMs: number;
  /** Objects nothing references that were kept because they are younger than the grace period. */
  keptByGrace: number;
  /** True when nothing was removed: the figures say what a prune would remove. */
  dryRun: boolean;
}

function checkOptions(options: PruneOptions): Required<Pick<PruneOptions, 'retain'>> & PruneOptions {
  const { retain, keepDays, maxStoreBytes, graceMs } = options;
  if (graceMs !== undefined && (!Number.isFinite(graceMs) || graceMs < 0)) throw new CheckpointError('INVALID_ARGUMENT', 'graceMs must be a non-negative number');
  if (retain === undefined || !Number.isSafeInteger(retain) || retain < 0) throw new CheckpointError('INVALID_ARGUMENT', 'retain must be a non-negative integer');
  if (keepDays !== undefined && (!Number.isFinite(keepDays) || keepDays < 0)) throw new CheckpointError('INVALID_ARGUMENT', 'keepDays must be a non-negative number');
  if (maxStoreBytes !== undefined && (!Number.isSafeInteger(maxStoreBytes) || maxStoreBytes < 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'maxStoreBytes must be a non-negative integer');
  }
  return { ...options, retain };
}

/**
 * Prune, under the store lock: checkpoints beyond `retain`, then older than `keepDays`, then the
 * oldest while the store exceeds `maxStoreBytes`; then every object no checkpoint and no state
 * document (stat cache, picture base, call baseline) references and older than the grace period (a concurrent capture may be about to reference a fresh one; a
 * dedupe hit refreshes an old object's mtime for the same reason); then stale temp files.
 */
export async function pruneStore(ctx: StoreContext, options: PruneOptions): Promise<PruneReport> {
  const resolved = checkOptions(options);
  return ctx.withLock(async () => {
    const now = Date.now();
    const held = await loadReferences(ctx);
    // A shortened grace period is the caller's promise about its own captures. Another live
    // process with the store open may have deduplicated against any object here a moment ago (its
    // journal line follows the hit, and its turn's journal may not even exist yet), so then the
    // full period holds for everything.
    const shortened = resolved.graceMs !== undefined && resolved.graceMs < GRACE_MS;
    const othersLive = shortened && (held.some((item) => item.otherLiveWriter) || (await otherProcessHasStoreOpen(ctx.fs, ctx.layout, now)));
    const graceMs = othersLive ? GRACE_MS : (resolved.graceMs ?? GRACE_MS);
    const dryRun = resolved.dryRun === true;
    const report: PruneReport = { removedCheckpoints: [], removedObjects: 0, freedBytes: 0, cleared: [], graceMs, keptByGrace: 0, dryRun };
    const refcount = new Map<string, number>();
    for (const item of held) for (const key of item.refs) refcount.set(key, (refcount.get(key) ?? 0) + 1);
    const state = await stateReferences(ctx);
    for (const key of state.refs.keys()) refcount.set(key, (refcount.get(key) ?? 0) + 1);
    // A compressed document that does not decode may name any object: none is removed (verify names the document).
    const keepAllObjects = state.unreadable.length > 0 || held.some((item) => item.unknownRefs);
    const objects = new Map((await ctx.objects.listLoose()).map((info) => [info.key, info]));
    const removed = new Set<CheckpointId>();

    const remove = async (item: Held, reason: PruneReason): Promise<number> => {
      let freed = 0;
      for (const file of item.files) {
        if (dryRun) {
          freed += file.size;
          continue;
        }
        try {
          await ctx.fs.unlink(file.path);
          freed += file.size;
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove checkpoint', file.path);
        }
      }
      for (const key of item.refs) refcount.set(key, (refcount.get(key) ?? 1) - 1);
      removed.add(item.id);
      report.cleared.push({ id: item.id, reason });
      report.freedBytes += freed;
      return freed;
    };
    const collectLoose = async (): Promise<number> => {
      let freed = 0;
      for (const [key, info] of objects) {
        if ((refcount.get(key) ?? 0) > 0) continue;
        if (now - info.mtimeMs < graceMs) {
          report.keptByGrace += 1;
          continue;
        }
        try {
          await ctx.fs.unlink(info.path);
          freed += info.diskSize;
          if (!ctx.objects.hasCopyElsewhere(key)) report.removedObjects += 1;
        } catch (error) {
          if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove object', info.path);
        }
        objects.delete(key);
      }
      return freed;
    };
    // The dry run's object figures: every unreferenced object past the grace period, loose or packed.
    const wouldCollect = async (): Promise<number> => {
      let freed = 0;
      for (const [key, info] of objects) {
        if ((refcount.get(key) ?? 0) > 0) continue;
        if (now - info.mtimeMs < graceMs) report.keptByGrace += 1;
        else {
          report.removedObjects += 1;
          freed += info.diskSize;
        }
      }
      const counted = new Set<string>();
      for (const record of await ctx.objects.listObjects()) {
        if (record.pack === undefined || (refcount.get(record.key) ?? 0) > 0 || objects.has(record.key)) continue;
        freed += now - record.mtimeMs < graceMs ? 0 : record.diskSize;
        if (counted.has(record.key)) continue;
        counted.add(record.key);
        if (now - record.mtimeMs < graceMs) report.keptByGrace += 1;
        else report.removedObjects += 1;
      }
      report.freedBytes += freed;
      return freed;
    };
    const collect = async (): Promise<number> => {
      if (dryRun || keepAllObjects) return 0;
      const freed = (await collectLoose()) + (await collectPacks(ctx, { now, graceMs, refcount, loose: objects, report }));
      report.freedBytes += freed;
      return freed;
    };

    const removable = held.filter((item) => item.removable);
    let excess = held.length - resolved.retain;
    for (const item of removable) {
      if (excess <= 0) break;
      await remove(item, 'retain');
      excess -= 1;
    }
    if (resolved.keepDays !== undefined) {
      const cutoff = now - resolved.keepDays * 86_400_000;
      for (const item of removable) {
        if (!removed.has(item.id) && checkpointIdTime(item.id) < cutoff) await remove(item, 'keep-days');
      }
    }
    await collect();
    if (dryRun && !keepAllObjects) await wouldCollect();
    else report.freedBytes += await removeLeftovers(ctx, now);
    // Not simulated in a dry run: what the cap clears depends on what each removal frees.
    if (resolved.maxStoreBytes !== undefined && !dryRun) {
      let size = await ctx.storeSizeBytes();
      for (const item of removable) {
        if (size <= resolved.maxStoreBytes) break;
        if (removed.has(item.id)) continue;
        size -= await remove(item, 'store-full');
        size -= await collect();
      }
    }
    report.removedCheckpoints = [...removed].sort();
    report.cleared.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return report;
  });
}

/** What {@link collectPacks} needs from prune. */
interface PackCollection {
  now: number;
  graceMs: number;
  refcount: Map<string, number>;
  loose: Map<string, unknown>;
  report: PruneReport;
}

/**
 * True for a pack of one-object records worth rewriting as blocks (layout version 2's, or this
 * version's first-touch copies stored raw): at least {@link UNBLOCKED_RECORDS} compressible ones.
 */
function unblocked(pack: PackFile): boolean {
  let records = 0;
  for (const loc of pack.records) if (loc.block === undefined && isBlockableKey(loc.key) && (parseObjectKey(loc.key)?.size ?? 0) >= COMPRESS_MIN_BYTES) records += 1;
  return records >= UNBLOCKED_RECORDS;
}

/** One-object records a pack must hold before prune rewrites it as blocks. */
const UNBLOCKED_RECORDS = 64;

/** Fraction of a pack's bytes that must be garbage before it is rewritten. */
const REPACK_GARBAGE_SHARE = 0.5;
/** Sealed packs smaller than this count as small… */
const SMALL_PACK_BYTES = 4 * 1024 * 1024;
/** …and once there are this many of them, prune merges them. */
const MERGE_SMALL_PACKS = 16;

/**
 * Collects garbage in packs. Safety without a lock on captures rests on three rules:
 *  - a pack that may still be appended to is never touched: this process's current pack, and an
 *    unsealed pack whose writer is alive on this host (or, for another host or a headerless pack,
 *    that was written within `GRACE_MS`; a writer idle for `PACK_FRESH_MS` rolls over to a new
 *    pack before appending again, so an older pack is finished);
 *  - no pack modified within `graceMs` is rewritten or deleted (fresh records may be about to be
 *    referenced by a capture that has not yet written its journal line);
 *  - captures only dedupe against packs modified within `PACK_FRESH_MS` (half the grace period);
 *    an older hit is stored again in the capture's own pack.
 * A pack whose records are all unreferenced is deleted; one that is mostly garbage is rewritten
 * (its referenced records appended to this process's pack, then the old pack deleted, so a
 * crash in between leaves duplicates, never a loss). A dead writer's unsealed pack is sealed
 * first (torn tail cut, index written).
 */
async function collectPacks(ctx: StoreContext, c: PackCollection): Promise<number> {
  const { objects } = ctx;
  // Blocks still being compressed belong to the pack they are about to join.
  await objects.settlePending();
  if (c.graceMs < PACK_FRESH_MS || objects.ownPackIdleMs >= PACK_FRESH_MS) objects.sealPack();
  let freed = 0;
  const packs = await objects.packFiles();
  // Many small sealed packs (one per short-lived process, e.g. CLI runs) are merged into one, so
  // opening the store keeps reading a bounded number of index files.
  const small = packs.filter((p) => p.sealed && p !== objects.ownPack && p.scannedTo < SMALL_PACK_BYTES);
  const mergeSmall = small.length >= MERGE_SMALL_PACKS;
  for (const pack of packs) {
    if (pack === objects.ownPack || pack.gone) continue;
    let mtimeMs: number;
    try {
      mtimeMs = (await ctx.fs.lstat(pack.path)).mtimeMs;
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') continue;
      throw asCheckpointError(error, 'cannot inspect pack', pack.path);
    }
    pack.mtimeMs = mtimeMs;
    if (!pack.sealed) {
      // Still being written? On this host the pid answers; elsewhere (or headerless) only the age.
      const header = pack.header;
      const writerAlive =
        header !== undefined && header.hostname === HOSTNAME
          ? header.pid === process.pid
            ? isOpenInThisProcess(pack.name)
            : isPidAlive(header.pid)
          : c.now - mtimeMs < GRACE_MS;
      if (writerAlive) continue;
      if (pack.records.length === 0) {
        // A crash between creating the pack and writing its header, or before the first record.
        if (pack.corruptAt === undefined || pack.corruptAt === 0) freed += await objects.removePack(pack);
        continue;
      }
      // A damaged record stops the scan: what follows it is unknown, so leave the pack to verify.
      if (pack.corruptAt !== undefined) continue;
      objects.sealDeadPack(pack);
    }
    const unreferenced = (): number => pack.records.filter((loc) => (c.refcount.get(loc.key) ?? 0) === 0).length;
    if (c.now - mtimeMs < c.graceMs) {
      c.report.keptByGrace += unreferenced();
      continue;
    }
    if (c.now - mtimeMs < GRACE_MS) {
      // A shortened grace period (forgetting a session) is the caller's promise about its own
      // captures, not another live process's: that one's young packs keep the full period.
      const header = pack.header ?? readPackHeader(pack.path);
      if (header !== undefined && header.pid !== process.pid && (header.hostname !== HOSTNAME || isPidAlive(header.pid))) {
        c.report.keptByGrace += unreferenced();
        continue;
      }
    }
    const live = pack.records.filter((loc) => (c.refcount.get(loc.key) ?? 0) > 0);
    const liveBytes = live.reduce((sum, loc) => sum + diskShare(loc, parseObjectKey(loc.key)?.size ?? 0), 0);
    const merge = mergeSmall && pack.scannedTo < SMALL_PACK_BYTES;
    if (live.length > 0 && liveBytes >= pack.scannedTo * (1 - REPACK_GARBAGE_SHARE) && !merge && !unblocked(pack)) continue;
    const before = objects.written;
    const batch = objects.openBatch();
    try {
      for (const loc of live) {
        const own = objects.ownPack;
        if (own !== undefined && own.records.some((r) => r.key === loc.key) && objects.hasCopyElsewhere(loc.key, pack)) continue;
        objects.copyRecord(loc, batch);
      }
    } catch (error) {
      // A damaged referenced record: keep the whole pack (verify reports the damage).
      if (error instanceof CheckpointError && error.code === 'INTEGRITY') {
        await objects.endBatch(batch);
        continue;
      }
      throw error;
    }
    // The copies are on disk before the pack they replace goes; one that could not be written keeps it.
    if ((await objects.endBatch(batch)).size > 0) continue;
    const copied = objects.written - before;
    const dropped = new Set(pack.records.filter((loc) => (c.refcount.get(loc.key) ?? 0) === 0).map((loc) => loc.key));
    freed += (await objects.removePack(pack)) - copied;
    for (const key of dropped) if (!objects.hasCopyElsewhere(key) && !c.loose.has(key)) c.report.removedObjects += 1;
  }
  return freed;
}
