import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import * as path from 'node:path';
import { CheckpointError, errnoCode, isCheckpointError, type CheckpointErrorCode } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import type { Fingerprint, PathState } from '../core/model.js';
import type { DiskState } from '../fs/disk-state.js';
import { diskFingerprint, readDiskState, readDiskStateSync } from '../fs/disk-state.js';
import type { FileSystem, SyncFileSystem } from '../fs/file-system.js';
import { TEMP_PREFIX } from '../fs/file-system.js';
import { assertCanonicalProjectPath, resolveInsideRoot, type AncestorMemo } from '../fs/paths.js';
import { restoredMode } from './modes.js';
import type { PlanEntry, PlanReason } from './plan.js';
import { isWritingAction } from './plan.js';

/** What apply needs: the file system, the canonical project root, and verified object reads. */
export interface ApplyContext {
  fs: FileSystem;
  /** Absolute, canonical project root. */
  projectRoot: string;
  /** Returns an object's bytes; should throw `INTEGRITY` on a size or hash mismatch. */
  readObject(object: string): Promise<Buffer>;
  /**
   * Called for each entry after its guard passed and before its destination is touched, with
   * what the guard just read: the session layer saves that content (the pre-restore save) here,
   * so a file is read once for both. `'go'` swaps; `refuse` (the content moved again) and `leave`
   * (it cannot be saved) remove the entry's stage and report it. A throw fails the restore and
   * rolls back like any failed step.
   */
  beforeSwap?(entry: PlanEntry, sight: GuardSight): Promise<SwapDecision>;
}

/** What the guard read just before a swap. */
export interface GuardSight {
  state: DiskState;
  /** The content of a regular file of at most 256 KiB, read by the guard; absent for larger ones. */
  bytes?: Buffer;
}

/** The answer of {@link ApplyContext.beforeSwap}. */
export type SwapDecision = 'go' | { refuse: Fingerprint } | { leave: PlanReason };

/** Options for {@link applyRestore}. */
export interface ApplyOptions {
  /**
   * Cancels the restore before its commit point; completed steps are rolled back.
   * @default undefined
   */
  signal?: AbortSignal;
  /**
   * Power-loss durability: fsync every staged file before it is published and every touched
   * folder after the commit. Off by default, like `git checkout` (which does not fsync either)
   * and like the captures a restore undoes: a process crash loses nothing either way; only a
   * power loss right after the restore may leave restored files empty or old (the pre-restore
   * checkpoint, not fsynced either, is the way back). Costs about one journal commit per file.
   * @default false
   */
  durable?: boolean;
}

/** Why a writing entry did not complete: a {@link CheckpointErrorCode}, an errno code (`EACCES`, …), or `ABORT_ERR`. */
export type RestoreFailureCode = CheckpointErrorCode | 'ABORT_ERR' | `E${string}`;

/** A writing entry that did not complete. */
export interface ApplyFailure {
  path: string;
  error: string;
  /** Absent when the failure carried no code. */
  code?: RestoreFailureCode;
}

/** The receipt of an apply. */
export interface ApplyResult {
  /** Entries written (restored, recreated, deleted). Empty when the restore rolled back. */
  restored: PlanEntry[];
  /** Entries refused by the plan, or by the guard just before the swap (`changed-since-plan`). */
  refused: PlanEntry[];
  /** `skip` and `leave` entries, with their reasons. */
  skipped: PlanEntry[];
  /** Writing entries that failed, were rolled back, or were never attempted. */
  failed: ApplyFailure[];
  /** Project-relative paths of turnback temp files or folders that could not be removed. */
  cleanupPending: string[];
  /** True when a failure or cancellation undid every completed write. */
  rolledBack: boolean;
}

type WritingEntry = PlanEntry & { action: 'restore' | 'recreate' | 'delete' };

interface Prepared {
  entry: WritingEntry;
  /** Object bytes held from preflight; `undefined` for symlinks, deletes, and past the memory budget. */
  bytes?: Buffer;
  mode: number;
}

/** An entry whose folders exist and whose stage is being (or has been) written. */
interface Staged {
  dest: string;
  dir: string;
  /** This entry's own steps (folders, stage), undone when its guard refuses it. */
  own: Step[];
  /** Settles when the stage file is complete; rejects with the failure that stops the restore. */
  ready?: Promise<void>;
  /** A failure of the folder phase, thrown when the entry's turn comes. */
  failure?: unknown;
  stage?: Extract<Step, { kind: 'stage' }>;
  bytes?: Buffer;
  /** No stage yet: the swap stages it in a recycled inode first (see `stageRecycled`). */
  deferred?: boolean;
}

function isLarge(item: Prepared): boolean {
  return item.entry.action !== 'delete' && item.entry.target.type === 'file' && item.entry.target.size > SYNC_WRITE_MAX_BYTES;
}

/** One completed, undoable step. Rollback walks these in reverse; commit removes the temp files. */
type Step =
  | { kind: 'mkdir'; abs: string }
  | { kind: 'stage'; abs: string }
  | { kind: 'displaced'; dest: string; displaced: string }
  | { kind: 'placed'; dest: string }
  | { kind: 'in-place'; dest: string; copy: string; mode: number }
  /** Moved aside and its inode reused as a stage; `original` (the guard's read, also saved first) is recreated on rollback. */
  | { kind: 'recycled'; dest: string; original: Buffer; mode: number };

/** Object bytes held between preflight and the writes; past this, objects are read again. */
const HELD_BYTES_BUDGET = 64 * 1024 * 1024;

/**
 * Files up to this size are staged with synchronous calls: a thread-pool round trip costs about
 * 80 µs on a busy machine, a synchronous call a few, and a restore of many small files is a long
 * run of such calls. Bounded so one call never blocks the event loop for long.
 */
const SYNC_WRITE_MAX_BYTES = 256 * 1024;

/** The event loop gets a turn at least this often (ms) while entries are applied synchronously. */
const YIELD_EVERY_MS = 10;

/** Original bytes held for in-place rewrites; past this, entries are staged and swapped instead. */
const HELD_ORIGINALS_BUDGET = 64 * 1024 * 1024;

/** Temp files removed at once after the commit. */
const COMMIT_UNLINKS_IN_FLIGHT = 16;

/** How many entries ahead of the one being swapped have their stage created. */
const STAGES_AHEAD = 16;

/** Objects read and verified at once during preflight. */
const PREFLIGHT_READS_IN_FLIGHT = 8;

/** Link errors that mean "this file system has no hard links", where we fall back to rename. */
const NO_LINK_CODES = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV', 'EMLINK']);

class PreflightFailure {
  constructor(
    readonly entry: WritingEntry,
    readonly cause: unknown,
  ) {}
}

class Refused {
  constructor(readonly found: string) {}
}

class Left {
  constructor(readonly reason: PlanReason) {}
}

/**
 * Executes the writing entries of a plan as one transaction.
 *
 * 1. Preflight, read-only: every writing entry's path is re-validated (canonical, inside the root,
 *    no symlinked or non-folder ancestor, never `.git`) and every object is read and verified.
 *    Any failure fails every writing entry and touches nothing.
 * 2. Per entry, in order: create missing folders, stage the bytes beside the destination
 *    (`.turnback-stage-*`, exclusive create, final mode), re-check the guard, then move the
 *    destination aside (`.turnback-displaced-*`) and publish the stage with a create-only link.
 *    A hard-linked destination is instead copied aside and rewritten in place, so its other links
 *    see the restored content. Links are never followed: a symlink is replaced, not written through.
 * 3. On any failure or cancellation every completed step is undone in reverse; on success the
 *    displaced originals are removed (commit).
 *
 * Small files go through the file system's synchronous calls when it has them (`fs.sync`), the
 * rest through the promise API; both run the same steps. Nothing is fsynced unless
 * `options.durable` is set. Failures to remove temp files after commit or during rollback are
 * reported in `cleanupPending`, never thrown. Non-writing entries pass through to `refused` /
 * `skipped`.
 */
export async function applyRestore(
  context: ApplyContext,
  entries: PlanEntry[],
  options: ApplyOptions = {},
): Promise<ApplyResult> {
  const result: ApplyResult = { restored: [], refused: [], skipped: [], failed: [], cleanupPending: [], rolledBack: false };
  const writing: WritingEntry[] = [];
  for (const entry of entries) {
    if (isWritingAction(entry.action)) writing.push(entry as WritingEntry);
    else if (entry.action === 'refuse') result.refused.push(entry);
    else result.skipped.push(entry);
  }
  if (writing.length === 0) return result;

  let prepared: Prepared[];
  try {
    throwIfAborted(options.signal);
    prepared = await preflight(context, writing);
  } catch (error) {
    const culprit = error instanceof PreflightFailure ? error.entry : undefined;
    const cause = error instanceof PreflightFailure ? error.cause : error;
    for (const entry of writing) {
      result.failed.push(
        culprit === undefined || entry === culprit
          ? describeFailure(entry.path, cause)
          : { path: entry.path, error: `not attempted: preflight failed for ${culprit.path}` },
      );
    }
    return result;
  }

  const tx = new Transaction(context, options.durable === true);
  const done: WritingEntry[] = [];
  const launched: Staged[] = [];
  let lastYield = performance.now();
  for (let i = 0; i < prepared.length; i++) {
    const item = prepared[i] as Prepared;
    try {
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        // Synchronous steps would otherwise hold the event loop for the whole restore.
        await new Promise<void>((resolve) => setImmediate(resolve));
        lastYield = performance.now();
      }
      throwIfAborted(options.signal);
      // Stages are created up to STAGES_AHEAD entries ahead, through the thread pool, so the
      // kernel's inode work overlaps the guards and swaps of earlier entries. A large file is
      // staged only when its turn comes (memory).
      while (launched.length < prepared.length && launched.length <= i + STAGES_AHEAD) {
        const next = prepared[launched.length] as Prepared;
        if (launched.length > i && isLarge(next)) break;
        launched.push(await tx.launch(next));
      }
      const outcome = await tx.swap(item, launched[i] as Staged, options.signal);
      if (outcome instanceof Refused) {
        result.refused.push({ ...item.entry, action: 'refuse', reason: 'changed-since-plan', foundHash: outcome.found });
      } else if (outcome instanceof Left) {
        result.skipped.push({ ...item.entry, action: 'leave', reason: outcome.reason });
      } else {
        done.push(item.entry);
      }
    } catch (error) {
      result.cleanupPending.push(...(await tx.rollback()));
      result.rolledBack = true;
      for (const entry of done) result.failed.push({ path: entry.path, error: 'rolled back' });
      result.failed.push(describeFailure(item.entry.path, error));
      for (const rest of prepared.slice(i + 1)) {
        result.failed.push({ path: rest.entry.path, error: `not attempted: rolled back after ${item.entry.path} failed` });
      }
      return result;
    }
  }
  result.cleanupPending.push(...(await tx.commit()));
  result.restored = done;
  return result;
}

async function preflight(context: ApplyContext, writing: WritingEntry[]): Promise<Prepared[]> {
  if (!path.isAbsolute(context.projectRoot)) {
    throw new CheckpointError('INVALID_ARGUMENT', `project root must be absolute: ${context.projectRoot}`);
  }
  await loadHasher();
  // Paths first, in plan order (cheap, and the first bad one is the culprit), then the objects.
  // Nothing is written yet, so each ancestor folder is inspected once for all the entries under it.
  const seen = new Set<string>();
  const ancestors: AncestorMemo = new Map();
  for (const entry of writing) {
    try {
      await checkEntry(context, entry, seen, ancestors);
    } catch (error) {
      throw new PreflightFailure(entry, error);
    }
  }
  // Which objects stay in memory is decided in plan order from the recorded sizes, so the budget
  // holds however the reads interleave.
  let heldBytes = 0;
  const hold = writing.map((entry) => {
    if (entry.action === 'delete' || entry.target.type !== 'file') return false;
    if (heldBytes + entry.target.size > HELD_BYTES_BUDGET) return false;
    heldBytes += entry.target.size;
    return true;
  });
  const prepared = new Array<Prepared | undefined>(writing.length);
  const errors = new Array<unknown>(writing.length);
  let next = 0;
  let failed = false;
  let lastYield = performance.now();
  const worker = async (): Promise<void> => {
    while (!failed && next < writing.length) {
      if (performance.now() - lastYield > YIELD_EVERY_MS) {
        // Object reads may be synchronous (small objects): keep the event loop responsive.
        lastYield = performance.now();
        await new Promise<void>((resolve) => setImmediate(resolve));
        // Other workers ran meanwhile: the queue may be empty now.
        if (!(!failed && next < writing.length)) break;
      }
      const index = next++;
      try {
        prepared[index] = await prepareOne(context, writing[index] as WritingEntry, hold[index] === true);
      } catch (error) {
        errors[index] = error;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PREFLIGHT_READS_IN_FLIGHT, writing.length) }, worker));
  for (let index = 0; index < writing.length; index++) {
    if (index in errors) throw new PreflightFailure(writing[index] as WritingEntry, errors[index]);
  }
  return prepared as Prepared[];
}

async function checkEntry(context: ApplyContext, entry: WritingEntry, seen: Set<string>, ancestors: AncestorMemo): Promise<void> {
  assertCanonicalProjectPath(entry.path);
  if (seen.has(entry.path)) {
    throw new CheckpointError('INVALID_ARGUMENT', `path appears twice in the plan: ${entry.path}`, { path: entry.path });
  }
  seen.add(entry.path);
  if (path.posix.basename(entry.path).startsWith(TEMP_PREFIX)) {
    throw new CheckpointError('INVALID_PATH', `refusing to restore a turnback temp file: ${entry.path}`, { path: entry.path });
  }
  if (entry.expectedHash === undefined) {
    throw new CheckpointError('INVALID_ARGUMENT', `writing entry without a guard fingerprint: ${entry.path}`, { path: entry.path });
  }
  await resolveInsideRoot(context.fs, context.projectRoot, entry.path, ancestors);
  const target = entry.target;
  if (entry.action === 'delete') {
    if (target.type !== 'absent') throw mismatch(entry);
    return;
  }
  if (target.type === 'symlink') {
    if (target.target.length === 0 || target.target.includes('\0')) {
      throw new CheckpointError('INVALID_ARGUMENT', `invalid recorded link target for ${entry.path}`, { path: entry.path });
    }
    return;
  }
  if (target.type !== 'file') throw mismatch(entry);
}

async function prepareOne(context: ApplyContext, entry: WritingEntry, hold: boolean): Promise<Prepared> {
  const target = entry.target;
  if (entry.action === 'delete' || target.type !== 'file') return { entry, mode: 0 };
  const bytes = await readVerified(context, entry.path, target);
  // A plan always sets the mode; a hand-built entry without one gets the conservative policy.
  const mode = entry.mode === undefined ? restoredMode('never-widen', target.mode) : entry.mode & 0o777;
  return hold ? { entry, bytes, mode } : { entry, mode };
}

function mismatch(entry: PlanEntry): CheckpointError {
  return new CheckpointError('INVALID_ARGUMENT', `${entry.action} cannot restore a ${entry.target.type} state: ${entry.path}`, {
    path: entry.path,
  });
}

async function readVerified(
  context: ApplyContext,
  projectPath: string,
  target: Extract<PathState, { type: 'file' }>,
): Promise<Buffer> {
  let bytes: Buffer;
  try {
    bytes = await context.readObject(target.object);
  } catch (error) {
    if (isCheckpointError(error)) throw new CheckpointError(error.code, error.message, { path: projectPath, cause: error });
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} is missing or unreadable`, {
      path: projectPath,
      cause: error,
    });
  }
  // The store verifies too; checking here keeps apply safe with any readObject.
  const hash = contentHash(bytes);
  if (bytes.length !== target.size || hash !== target.hash) {
    throw new CheckpointError('INTEGRITY', `object ${target.object} for ${projectPath} does not match its record`, {
      path: projectPath,
      expected: `${target.size}:${target.hash}`,
      found: `${bytes.length}:${hash}`,
    });
  }
  return bytes;
}

function describeFailure(projectPath: string, error: unknown): ApplyFailure {
  const message = error instanceof Error ? error.message : String(error);
  const errno = errnoCode(error);
  const code: RestoreFailureCode | undefined = isCheckpointError(error) ? error.code : isAbort(error) ? 'ABORT_ERR' : errno?.startsWith('E') === true ? (errno as `E${string}`) : undefined;
  return code === undefined ? { path: projectPath, error: message } : { path: projectPath, error: message, code };
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === 'AbortError';
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted !== true) return;
  const reason: unknown = signal.reason;
  if (reason instanceof Error) throw reason;
  throw new DOMException(reason === undefined ? 'restore aborted' : String(reason), 'AbortError');
}

/** Random per process; the counter makes each name unique without a random draw per file. */
const TEMP_NAME_BASE = randomBytes(6).toString('hex');
let tempNameCounter = 0;

function tempName(kind: 'stage' | 'displaced'): string {
  tempNameCounter += 1;
  return `${TEMP_PREFIX}${kind}-${TEMP_NAME_BASE}${tempNameCounter.toString(16).padStart(4, '0')}`;
}

/** A file opened for writing by a stage or an in-place rewrite. */
interface OpenFile {
  /** Writes all of `bytes` into a new, empty file. */
  fill(bytes: Buffer): Promise<void>;
  /** Writes all of `bytes` from offset 0 of an existing file, after truncating it. */
  replace(bytes: Buffer): Promise<void>;
  /**
   * Writes all of `bytes` over an existing file of `oldSize` bytes from offset 0, then cuts it to
   * length: the file's blocks are overwritten rather than freed and allocated again, which is
   * most of the cost of a truncate-then-write of a small file.
   */
  rewrite(bytes: Buffer, oldSize: number): Promise<void>;
  /** fchmod: never follows a link, and undoes what the umask narrowed at create. */
  chmod(mode: number): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The calls a transaction makes, one set over the promise API (any injected `FileSystem`, so
 * fault injection reaches every step) and one over its synchronous calls for small files. The
 * transaction's steps are written once against this.
 */
interface Io {
  open(abs: string, flags: number | string, mode?: number): Promise<OpenFile>;
  mkdir(abs: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  link(from: string, to: string): Promise<void>;
  unlink(abs: string): Promise<void>;
  rmdir(abs: string): Promise<void>;
  symlink(target: string, abs: string): Promise<void>;
  /** False only when nothing is there (ENOENT). */
  exists(abs: string): Promise<boolean>;
}

function promiseIo(fs: FileSystem): Io {
  return {
    async open(abs, flags, mode) {
      const handle = await fs.open(abs, flags, mode);
      return {
        async fill(bytes) {
          await handle.writeFile(bytes);
        },
        async replace(bytes) {
          await handle.truncate(0);
          await handle.write(bytes, 0, bytes.length, 0);
        },
        async rewrite(bytes, oldSize) {
          for (let offset = 0; offset < bytes.length; ) offset += (await handle.write(bytes, offset, bytes.length - offset, offset)).bytesWritten;
          if (oldSize !== bytes.length) await handle.truncate(bytes.length);
        },
        chmod: (m) => handle.chmod(m),
        sync: () => handle.sync(),
        close: () => handle.close(),
      };
    },
    async mkdir(abs) {
      await fs.mkdir(abs);
    },
    rename: (from, to) => fs.rename(from, to),
    link: (from, to) => fs.link(from, to),
    unlink: (abs) => fs.unlink(abs),
    rmdir: (abs) => fs.rmdir(abs),
    symlink: (target, abs) => fs.symlink(target, abs),
    async exists(abs) {
      try {
        await fs.lstat(abs);
        return true;
      } catch (error) {
        return errnoCode(error) !== 'ENOENT';
      }
    },
  };
}

function syncIo(fs: SyncFileSystem): Io {
  const writeAll = (fd: number, bytes: Buffer): void => {
    // writeSync may write less than asked (signals, quotas): loop until every byte is down.
    for (let offset = 0; offset < bytes.length; ) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset, offset);
  };
  return {
    async open(abs, flags, mode) {
      const fd = fs.openSync(abs, flags, mode);
      return {
        async fill(bytes) {
          writeAll(fd, bytes);
        },
        async replace(bytes) {
          fs.ftruncateSync(fd, 0);
          writeAll(fd, bytes);
        },
        async rewrite(bytes, oldSize) {
          writeAll(fd, bytes);
          if (oldSize !== bytes.length) fs.ftruncateSync(fd, bytes.length);
        },
        async chmod(m) {
          fs.fchmodSync(fd, m);
        },
        async sync() {
          fs.fsyncSync(fd);
        },
        async close() {
          fs.closeSync(fd);
        },
      };
    },
    async mkdir(abs) {
      fs.mkdirSync(abs);
    },
    async rename(from, to) {
      fs.renameSync(from, to);
    },
    async link(from, to) {
      fs.linkSync(from, to);
    },
    async unlink(abs) {
      fs.unlinkSync(abs);
    },
    async rmdir(abs) {
      fs.rmdirSync(abs);
    },
    async symlink(target, abs) {
      fs.symlinkSync(target, abs);
    },
    async exists(abs) {
      try {
        fs.lstatSync(abs);
        return true;
      } catch (error) {
        return errnoCode(error) !== 'ENOENT';
      }
    },
  };
}

/** The undo log of one apply, and the operations that append to it. */
class Transaction {
  private readonly steps: Step[] = [];
  private readonly touchedDirs = new Set<string>();
  /** Leftovers of entries refused mid-apply, reported with the final outcome. */
  private readonly leftovers: string[] = [];
  private readonly fs: FileSystem;
  /** Every call through the promise API (large files, in-place rewrites, and when the fs has no sync calls). */
  private readonly slow: Io;
  /** Synchronous calls when the file system offers them, else the promise API. */
  private readonly fast: Io;
  /** Stage writes started ahead; rollback waits for them so every stage it must remove is logged. */
  private readonly inflight: Promise<void>[] = [];
  /** Set once a folder phase or stage write failed: nothing more is started. */
  private stopped = false;
  /** Bytes of originals held by `recycled` steps. */
  private heldOriginals = 0;
  /** Folders a full ancestor walk verified in this restore: absolute path → device and inode. */
  private readonly verifiedFolders = new Map<string, { dev: number; ino: number }>();
  /** The inode of the last recycled original, waiting to become the next stage. */
  private spare: { step: Extract<Step, { kind: 'stage' }>; size: number; mode: number } | undefined;

  constructor(
    private readonly context: ApplyContext,
    private readonly durable: boolean,
  ) {
    this.fs = context.fs;
    this.slow = promiseIo(context.fs);
    this.fast = context.fs.sync === undefined ? this.slow : syncIo(context.fs.sync);
  }

  /**
   * The folder phase of an entry, in plan order (each sees the folders earlier entries created),
   * then its stage file started through the promise API. Never throws: a failure is kept and
   * thrown when the entry's turn comes, so the restore blames the right entry.
   */
  async launch(item: Prepared): Promise<Staged> {
    const { entry } = item;
    const staged: Staged = { dest: '', dir: '', own: [] };
    if (this.stopped) {
      staged.failure = new CheckpointError('IO', `not staged: an earlier stage failed`, { path: entry.path });
      return staged;
    }
    if (entry.action === 'restore' && entry.target.type === 'file' && !isLarge(item) && this.context.fs.sync !== undefined && !this.durable) {
      // Staged when its turn comes, in the inode the previous original left (no inode created:
      // creating one is most of a small restore's kernel work), and its folders are checked then,
      // once, just before the stage is written. A durable restore stages ahead, in new inodes,
      // fsynced.
      staged.dest = path.join(this.context.projectRoot, ...entry.path.split('/'));
      staged.dir = path.dirname(staged.dest);
      staged.deferred = true;
      return staged;
    }
    try {
      await this.makeFolders(entry, staged);
    } catch (error) {
      this.stopped = true;
      staged.failure = error;
      return staged;
    }
    if (entry.action !== 'delete' && entry.target.type === 'file') {
      const ready = this.createStage(item, entry.target, staged);
      // Observed by swap(), or by rollback(); never left unhandled.
      ready.catch(() => {
        this.stopped = true;
      });
      this.inflight.push(ready);
      staged.ready = ready;
    }
    return staged;
  }

  /**
   * Checks the entry's ancestors (each a real folder or missing, never a link), creates the
   * missing ones in plan order, and sets the stage's destination and folder.
   */
  private async makeFolders(entry: WritingEntry, staged: Staged): Promise<void> {
    const dest = path.join(this.context.projectRoot, ...entry.path.split('/'));
    const dir = path.dirname(dest);
    const verified = this.verifiedFolders.get(dir);
    if (verified !== undefined && (await this.isSameFolder(dir, verified))) {
      staged.dest = dest;
      staged.dir = dir;
      return;
    }
    const resolved = await resolveInsideRoot(this.fs, this.context.projectRoot, entry.path);
    staged.dest = resolved.absolute;
    staged.dir = path.dirname(resolved.absolute);
    if (resolved.folder !== undefined) this.verifiedFolders.set(staged.dir, resolved.folder);
    for (const folder of resolved.missingDirs) {
      const abs = path.join(this.context.projectRoot, ...folder.split('/'));
      await this.fast.mkdir(abs);
      const step: Step = { kind: 'mkdir', abs };
      this.steps.push(step);
      staged.own.push(step);
    }
  }

  /** True when `abs`'s folder is still the one verified for it, or a fresh ancestor walk passes. */
  private async isStillInside(abs: string): Promise<boolean> {
    const dir = path.dirname(abs);
    const verified = this.verifiedFolders.get(dir);
    if (verified !== undefined && (await this.isSameFolder(dir, verified))) return true;
    try {
      // Missing folders are fine: the step then finds nothing to undo, and says so.
      await resolveInsideRoot(this.fs, this.context.projectRoot, this.relative(abs));
      return true;
    } catch {
      return false;
    }
  }

  /**
   * One `lstat` instead of a walk: the path still reaches a real folder with the inode a full walk
   * verified in this restore. A link swapped in for any ancestor (or the folder) since then leads
   * somewhere else, or is a link itself, and the caller walks again (and refuses the link).
   */
  private async isSameFolder(dir: string, verified: { dev: number; ino: number }): Promise<boolean> {
    try {
      const sync = this.fs.sync;
      const stats = sync !== undefined ? sync.lstatSync(dir) : await this.fs.lstat(dir);
      return stats.isDirectory() && stats.ino === verified.ino && stats.dev === verified.dev;
    } catch {
      return false;
    }
  }

  private async createStage(item: Prepared, target: Extract<PathState, { type: 'file' }>, staged: Staged, io: Io = this.slow): Promise<void> {
    const bytes = item.bytes ?? (await readVerified(this.context, item.entry.path, target));
    const abs = path.join(staged.dir, tempName('stage'));
    const file = await io.open(abs, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, item.mode);
    const step: Extract<Step, { kind: 'stage' }> = { kind: 'stage', abs };
    this.steps.push(step);
    staged.own.push(step);
    staged.stage = step;
    try {
      await file.fill(bytes);
      // The umask may have narrowed the create mode; fchmod on the handle never follows a link.
      await file.chmod(item.mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
    staged.bytes = bytes;
  }

  /** Guard, save hook, then the swap of one entry whose stage is ready. */
  async swap(item: Prepared, staged: Staged, signal: AbortSignal | undefined): Promise<Refused | Left | 'done'> {
    const { entry } = item;
    const target = entry.target;
    if (staged.failure !== undefined) throw staged.failure;
    if (staged.ready !== undefined) await staged.ready;
    const { dest, dir } = staged;
    const io = this.fast;
    const deferred = staged.deferred === true && target.type === 'file';
    if (deferred) {
      await this.makeFolders(entry, staged);
      await this.stageRecycled(item, target, staged);
    }

    // No early guard: the one just before the swap decides, and a path that diverged since the
    // plan is rare enough that staging it for nothing costs less than reading every path twice.
    // A deferred stage's folders were checked a moment ago, just before its stage was written:
    // the guard reads only the path itself.
    throwIfAborted(signal);
    const sight = await this.guard(entry, deferred);
    if (sight instanceof Refused) {
      await this.undoOwn(staged);
      return sight;
    }
    const decision = this.context.beforeSwap === undefined ? 'go' : await this.context.beforeSwap(entry, sight);
    if (decision !== 'go') {
      await this.undoOwn(staged);
      return 'refuse' in decision ? new Refused(decision.refuse) : new Left(decision.leave);
    }
    const now = sight.state;

    const stage = staged.stage;
    const bytes = staged.bytes;
    if (entry.action === 'delete') {
      await this.displace(io, dest, dir);
    } else if (target.type === 'symlink') {
      if (now.type !== 'absent') await this.displace(io, dest, dir);
      // symlink() is create-only: a writer that lands in the gap makes this fail instead of being overwritten.
      await io.symlink(target.target, dest);
      this.steps.push({ kind: 'placed', dest });
    } else if (stage !== undefined && bytes !== undefined) {
      if (now.type === 'file' && now.nlink > 1) {
        await this.rewriteInPlace(dest, dir, bytes, item.mode, now.mode);
      } else {
        const recyclable = now.type === 'file' && now.nlink === 1 && sight.bytes !== undefined && this.heldOriginals + sight.bytes.length <= HELD_ORIGINALS_BUDGET;
        if (recyclable && (await this.replaceKeepingOriginal(io, stage, dest, dir, { original: sight.bytes as Buffer, mode: now.mode }))) {
          this.touchedDirs.add(dir);
          return 'done';
        }
        if (now.type !== 'absent') await this.displace(io, dest, dir);
        await this.publish(io, stage.abs, dest);
        this.steps.push({ kind: 'placed', dest });
      }
      await this.removeStage(io, stage);
    }
    this.touchedDirs.add(dir);
    return 'done';
  }

  /** Reads the disk state (and a small file's bytes) and compares it with the plan's fingerprint. */
  private async guard(entry: WritingEntry, ancestorsChecked: boolean): Promise<Refused | GuardSight> {
    const sync = this.fs.sync;
    const sight = (sync === undefined ? undefined : readDiskStateSync(sync, this.context.projectRoot, entry.path, { ancestorsChecked })) ?? {
      state: await readDiskState(this.fs, this.context.projectRoot, entry.path),
    };
    const found = diskFingerprint(sight.state);
    return found === entry.expectedHash ? sight : new Refused(found);
  }

  private async displace(io: Io, dest: string, dir: string): Promise<void> {
    const displaced = path.join(dir, tempName('displaced'));
    await io.rename(dest, displaced);
    this.steps.push({ kind: 'displaced', dest, displaced });
  }

  /**
   * The swap of a plain single-link file whose bytes the guard read (and the save-first stored):
   * the original gets a second name beside it (`link`), then the stage replaces the destination in
   * one `rename`, so the destination is never missing. The original's inode, now only under the
   * second name, becomes the next entry's stage; rollback recreates the original from the held
   * bytes. Two directory operations where displace-and-publish takes four.
   */
  private async replaceKeepingOriginal(io: Io, stage: Extract<Step, { kind: 'stage' }>, dest: string, dir: string, held: { original: Buffer; mode: number }): Promise<boolean> {
    const kept = path.join(dir, tempName('displaced'));
    try {
      await io.link(dest, kept);
    } catch (error) {
      const code = errnoCode(error);
      // No hard links here: the caller displaces and publishes instead.
      if (code !== undefined && NO_LINK_CODES.has(code)) return false;
      throw error;
    }
    // Logged as a stage: until the swap it is only a second name of the original, safe to unlink.
    const keptStep: Extract<Step, { kind: 'stage' }> = { kind: 'stage', abs: kept };
    this.steps.push(keptStep);
    await io.rename(stage.abs, dest);
    this.forget(stage);
    // Reverse order on rollback: remove the placed file, recreate the original, drop the spare.
    this.forget(keptStep);
    this.heldOriginals += held.original.length;
    this.steps.push(this.takeSpare(keptStep, held.original.length, held.mode));
    this.steps.push({ kind: 'recycled', dest, original: held.original, mode: held.mode });
    this.steps.push({ kind: 'placed', dest });
    return true;
  }

  /** Keeps a spare inode (logged as a stage, so commit or rollback removes it if unused). */
  private takeSpare(step: Extract<Step, { kind: 'stage' }>, size: number, mode: number): Step {
    this.spare = { step, size, mode };
    return step;
  }

  /**
   * Stages a small file beside its destination, in the inode the previous entry's original left
   * (renamed into this folder, written over its blocks, cut to length), or in a new one when there
   * is none. Creating an inode is most of a small restore's kernel work; recycling one keeps every
   * write staged and every swap atomic at a fraction of the cost.
   */
  private async stageRecycled(item: Prepared, target: Extract<PathState, { type: 'file' }>, staged: Staged): Promise<void> {
    const spare = this.spare;
    this.spare = undefined;
    if (spare === undefined) {
      await this.createStage(item, target, staged, this.fast);
      return;
    }
    const bytes = item.bytes ?? (await readVerified(this.context, item.entry.path, target));
    let step = spare.step;
    if (path.dirname(spare.step.abs) !== staged.dir) {
      // Staged beside its destination: the spare moves into this folder first.
      const abs = path.join(staged.dir, tempName('stage'));
      await this.fast.rename(spare.step.abs, abs);
      this.forget(spare.step);
      step = { kind: 'stage', abs };
      this.steps.push(step);
    }
    const abs = step.abs;
    staged.own.push(step);
    staged.stage = step;
    await this.writeOver(this.fast, abs, bytes, item.mode, { size: spare.size, mode: spare.mode });
    staged.bytes = bytes;
  }

  /** Create-only publish: link the stage to the destination, falling back to rename without hard links. */
  private async publish(io: Io, stage: string, dest: string): Promise<void> {
    try {
      await io.link(stage, dest);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'EEXIST') {
        throw new CheckpointError('CONFLICT', `${this.relative(dest)} appeared while it was being restored`, {
          path: this.relative(dest),
          cause: error,
        });
      }
      if (code === undefined || !NO_LINK_CODES.has(code)) throw error;
      await io.rename(stage, dest);
    }
  }

  /**
   * Hard links survive: the shared inode is rewritten, so every other link sees the restored
   * content. The original bytes are copied aside first so rollback can put them back. Rare, so
   * always through the promise API.
   */
  private async rewriteInPlace(dest: string, dir: string, bytes: Buffer, mode: number, originalMode: number): Promise<void> {
    const copy = path.join(dir, tempName('displaced'));
    await this.fs.copyFile(dest, copy, fsConstants.COPYFILE_EXCL);
    this.steps.push({ kind: 'in-place', dest, copy, mode: originalMode });
    if (this.durable) await this.syncPath(copy);
    await this.overwrite(dest, bytes, mode);
  }

  /** Creates `dest` (create-only) with `bytes` and `mode`: rollback of a recycled original. */
  private async recreate(io: Io, dest: string, bytes: Buffer, mode: number): Promise<void> {
    const file = await io.open(dest, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, mode);
    try {
      await file.fill(bytes);
      await file.chmod(mode);
    } finally {
      await file.close();
    }
  }

  /**
   * Writes an existing file whole; never follows a link, never blocks on a FIFO. With `was` (what
   * the guard just saw) the old blocks are overwritten and the mode set only when it differs.
   */
  private async writeOver(io: Io, dest: string, bytes: Buffer, mode: number, was?: { size: number; mode: number }): Promise<void> {
    const file = await io.open(dest, fsConstants.O_WRONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    try {
      if (was === undefined) await file.replace(bytes);
      else await file.rewrite(bytes, was.size);
      if (was === undefined || (was.mode & 0o7777) !== (mode & 0o7777)) await file.chmod(mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
  }

  private async overwrite(dest: string, bytes: Buffer, mode: number): Promise<void> {
    const file = await this.slow.open(dest, fsConstants.O_RDWR | fsConstants.O_NOFOLLOW);
    try {
      await file.replace(bytes);
      await file.chmod(mode);
      if (this.durable) await file.sync();
    } finally {
      await file.close();
    }
  }

  /** fsync of a file or folder by path; folders are best effort (some platforms cannot). */
  private async syncPath(abs: string): Promise<void> {
    const file = await this.fast.open(abs, 'r');
    try {
      await file.sync();
    } finally {
      await file.close();
    }
  }

  /** Removes a consumed stage; a failure leaves the step logged so commit or rollback retries it. */
  private async removeStage(io: Io, stage: Step): Promise<void> {
    if (stage.kind !== 'stage') return;
    try {
      await io.unlink(stage.abs);
      this.forget(stage);
    } catch {
      // Not a failure of the restore: commit retries and reports it in cleanupPending.
    }
  }

  private forget(step: Step): void {
    // The stage is almost always the last step or next to it: search from the end.
    const index = this.steps.lastIndexOf(step);
    if (index >= 0) this.steps.splice(index, 1);
  }

  /**
   * Undoes one refused entry's own steps (its stage, then its folders). A folder that later
   * entries' stages already use stays logged, for the commit or a rollback to remove once empty.
   */
  private async undoOwn(staged: Staged): Promise<void> {
    for (const step of [...staged.own].reverse()) {
      const index = this.steps.lastIndexOf(step);
      if (index < 0) continue;
      if (step.kind === 'mkdir') {
        try {
          await ignoreMissing(() => this.fast.rmdir(step.abs));
        } catch (error) {
          if (errnoCode(error) === 'ENOTEMPTY' || errnoCode(error) === 'EEXIST') continue;
          this.leftovers.push(this.relative(step.abs));
        }
        this.steps.splice(this.steps.lastIndexOf(step), 1);
        continue;
      }
      this.steps.splice(index, 1);
      // Leftovers of a refused entry are rare; report them with the final outcome.
      this.leftovers.push(...(await this.undo([step])));
    }
    staged.own.length = 0;
  }

  /** Undoes every completed step in reverse. Returns what could not be cleaned up. */
  async rollback(): Promise<string[]> {
    this.stopped = true;
    // Stages still being written must be logged before the undo walks the log.
    await Promise.allSettled(this.inflight);
    return [...this.leftovers, ...(await this.undo(this.steps.splice(0)))];
  }

  private async undo(steps: Step[]): Promise<string[]> {
    const pending: string[] = [];
    const io = this.fast;
    for (const step of [...steps].reverse()) {
      const at = step.kind === 'mkdir' || step.kind === 'stage' ? step.abs : step.dest;
      if (!(await this.isStillInside(at))) {
        // A folder on the way became a link (or vanished) since it was checked: undoing through
        // it could write outside the project, so the step is left and reported instead.
        pending.push(this.relative(step.kind === 'displaced' ? step.displaced : step.kind === 'in-place' ? step.copy : at));
        continue;
      }
      switch (step.kind) {
        case 'placed':
          await ignoreMissing(() => io.unlink(step.dest)).catch(() => pending.push(this.relative(step.dest)));
          break;
        case 'displaced':
          // rename() would overwrite: if a writer put something at the destination meanwhile, keep both.
          if (await io.exists(step.dest)) pending.push(this.relative(step.displaced));
          else await io.rename(step.displaced, step.dest).catch(() => pending.push(this.relative(step.displaced)));
          break;
        case 'recycled':
          // Like a displaced original: put back only if nothing new is at the destination.
          if (await io.exists(step.dest)) pending.push(this.relative(step.dest));
          else await this.recreate(io, step.dest, step.original, step.mode & 0o7777).catch(() => pending.push(this.relative(step.dest)));
          break;
        case 'in-place':
          try {
            const original = await this.fs.readFile(step.copy);
            await this.overwrite(step.dest, original, step.mode & 0o7777);
            await this.fs.unlink(step.copy);
          } catch {
            pending.push(this.relative(step.copy));
          }
          break;
        case 'stage':
          await ignoreMissing(() => io.unlink(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
        case 'mkdir':
          // Only an empty folder is removed: a writer's new content in it is never deleted.
          await ignoreMissing(() => io.rmdir(step.abs)).catch(() => pending.push(this.relative(step.abs)));
          break;
      }
    }
    return pending;
  }

  /**
   * The commit point has passed: with `durable`, make the renames durable; then drop the
   * originals. Nothing here can fail the restore; leftovers are returned for `cleanupPending`.
   */
  async commit(): Promise<string[]> {
    if (this.durable) {
      for (const dir of this.touchedDirs) {
        // Best effort by design: the data itself was fsynced before publishing.
        await this.syncPath(dir).catch(() => undefined);
      }
    }
    const pending: string[] = [...this.leftovers];
    const leftovers: string[] = [];
    for (const step of this.steps) {
      if (step.kind === 'displaced') leftovers.push(step.displaced);
      else if (step.kind === 'in-place') leftovers.push(step.copy);
      else if (step.kind === 'stage') leftovers.push(step.abs);
    }
    // Through the thread pool, many at once: freeing the displaced originals (often files written
    // moments ago) is most of a restore's kernel work, and it overlaps well; measured 2-3x faster
    // than one synchronous unlink after another.
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < leftovers.length) {
        const leftover = leftovers[next++] as string;
        await ignoreMissing(() => this.fs.unlink(leftover)).catch(() => pending.push(this.relative(leftover)));
      }
    };
    await Promise.all(Array.from({ length: Math.min(COMMIT_UNLINKS_IN_FLIGHT, leftovers.length) }, worker));
    // Folders made for entries the guard then refused, kept while later stages used them: removed
    // now if empty (a folder holding a restored file, or a writer's new file, stays).
    for (const step of [...this.steps].reverse()) {
      if (step.kind !== 'mkdir') continue;
      try {
        await ignoreMissing(() => this.fast.rmdir(step.abs));
      } catch (error) {
        if (errnoCode(error) !== 'ENOTEMPTY' && errnoCode(error) !== 'EEXIST') pending.push(this.relative(step.abs));
      }
    }
    this.steps.length = 0;
    return pending.sort();
  }

  private relative(abs: string): string {
    return path.relative(this.context.projectRoot, abs).split(path.sep).join('/');
  }
}


async function ignoreMissing(operation: () => Promise<unknown>): Promise<void> {
  try {
    await operation();
  } catch (error) {
    if (errnoCode(error) !== 'ENOENT') throw error;
  }
}
