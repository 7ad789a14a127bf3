import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Gap, PathState, UncopiedReason } from '../core/model.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import type { ParallelLstat } from '../fs/parallel-lstat.js';
import type { StateWriteOptions } from '../store/store.js';
import { isCredentialPath, type IgnoreStack, type ResolvedCoverage } from './coverage.js';
import { scanTree, type ScanMemo, type ScanOptions, type StatRecord, type UncheckedPath } from './scan.js';

// The stat cache only saves re-reading files: without an fsync a power loss may cost one slower
// picture (a torn or missing document reads as no cache), never a wrong one.
const NOT_DURABLE: StateWriteOptions = { durable: false };

/**
 * The store calls a picture needs. `CheckpointStore` satisfies it structurally; tests pass a
 * small fake.
 */
export interface PictureStore {
  /**
   * Copies a regular file into the store (deduplicated by content). `expected` carries the scan's
   * size and mtime: a file that no longer matches them throws `CONFLICT`.
   */
  putFile(absPath: string, expected?: { size?: number; mtimeMs?: number }): Promise<{ object: string; hash: string; size: number; mode: number }>;
  /**
   * Optional: `putFile` on the calling thread for a small file; `undefined` sends the file to
   * `putFile`. Throws as `putFile` rejects.
   */
  putFileSync?(absPath: string, expected?: { size?: number; mtimeMs?: number }): { object: string; hash: string; size: number; mode: number } | undefined;
  /** Reads a small JSON document saved with {@link PictureStore.writeState}; `undefined` when absent. */
  readState(name: string): Promise<unknown>;
  /** Saves a small JSON document beside the store (atomically; fsynced unless `durable: false`). */
  writeState(name: string, value: unknown, options?: StateWriteOptions): Promise<void>;
  /** Lists state document names starting with `prefix`. Optional: without it old bases are kept. */
  listState?(prefix: string): Promise<string[]>;
  /** Removes a state document. Optional: without it a removed document is overwritten with `null`. */
  deleteState?(name: string): Promise<void>;
}

/** One covered path in a picture: its stat index entry plus the recorded state. */
export type PictureRecord = StatRecord & { state: PathState };

/**
 * A whole-tree picture. `records` is authoritative only outside `unchecked`: a path under an
 * unchecked folder is unknown, never "deleted".
 */
export interface Picture {
  /**
   * Every covered file and symlink, keyed by project path. When nothing changed this is the
   * cache's own map (compare by identity to know); treat it as read-only.
   */
  records: Map<string, PictureRecord>;
  /** True when the picture stopped early or left anything unchecked or uncopied by budget. */
  partial: boolean;
  /** Everything not captured, with reasons. */
  gaps: Gap[];
  /** Folders (or files) not checked. */
  unchecked: UncheckedPath[];
  /** Files read into the store by this picture. */
  copied: number;
  /** Bytes read into the store by this picture. */
  copiedBytes: number;
  /** One human sentence, e.g. "checkpoint partial: 48,000 new files in out/, 10,000 copied". */
  summary: string;
  /** The `.gitignore` epoch the walk ended at (see {@link PictureCache.ignoreEpoch}). */
  ignoreEpoch?: number;
}

/**
 * What a picture may reuse without reading a file: any earlier picture of the same project
 * (a {@link Picture} is one), or one loaded with {@link loadPictureCache}.
 */
export interface PictureCache {
  /** Earlier records, keyed by project path. */
  readonly records: ReadonlyMap<string, PictureRecord>;
  /** Parsed `.gitignore` rules kept in memory across pictures; not persisted. */
  ignores?: IgnoreStack;
  /**
   * The `ignores` epoch the records were taken at. When it still holds, files recorded earlier
   * in folders with unchanged rules skip the ignore match.
   */
  ignoreEpoch?: number;
  /** Per-folder listings kept in memory across pictures (see {@link ScanMemo}); not persisted. */
  memo?: ScanMemo;
  /** Two-thread `lstat` for repeat pictures of big trees (see {@link ScanOptions.parallel}). */
  parallel?: ParallelLstat;
}

/** Progress of a running picture. */
export interface PictureProgress {
  /** `scan`: the tree was walked; `copy`: files are being copied. */
  phase: 'scan' | 'copy';
  /** Folder entries listed. */
  walked: number;
  /** Files that need a copy (stat changed or never copied). */
  toCopy: number;
  /** Files copied so far. */
  copied: number;
}

/** Options of {@link takePicture}. */
export interface TakePictureOptions {
  /** Where file contents go. */
  store: PictureStore;
  /** The project folder. */
  projectRoot: string;
  /** Coverage rules and limits, resolved. */
  coverage: ResolvedCoverage;
  /** An earlier picture or loaded cache: files whose stat is unchanged are not read again. */
  cache?: PictureCache;
  /** Aborts the picture; the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Epoch milliseconds by which the picture must end.
   * @default Date.now() + coverage.maxPictureSeconds * 1000
   */
  deadline?: number;
  /** Absolute paths never covered (the store itself, when it sits inside the project). */
  exclude?: readonly string[];
  /** Called after the walk and as copies complete. */
  onProgress?: (progress: PictureProgress) => void;
  /** Lists one folder; for tests only (see {@link ScanOptions.readDir}). */
  readDir?: ScanOptions['readDir'];
}

/** Files copied at once: enough to overlap reads and store writes, few enough to bound memory. */
const COPY_CONCURRENCY = 8;
/** Files up to this size are offered to the store's synchronous copy (its pack limit). */
const SYNC_COPY_MAX_BYTES = 256 * 1024;
/** How long the synchronous copies may hold the event loop before yielding a turn. */
const YIELD_EVERY_MS = 10;
const PROGRESS_EVERY = 256;
const numberFormat = new Intl.NumberFormat('en-US');

type BudgetStop = 'files' | 'bytes' | 'time';

/**
 * Takes a whole-tree picture: walks the covered tree ({@link scanTree}), reuses the cached state
 * of every file whose (size, mtime, inode, mode) is unchanged, and copies the rest into the store
 * within the picture's budgets. Credential files and files over `maxFileMib` are recorded, never
 * read. Files past a budget are recorded `uncopied: 'picture-budget'` with no object, so the next
 * picture tries them again.
 *
 * Known limit: a same-size edit within one file-system mtime tick is invisible to the stat check.
 *
 * @throws CheckpointError `UNAVAILABLE` when the project root cannot be listed; the signal's
 *   reason when aborted. Per-file failures never throw: they become uncopied records and gaps.
 */
export async function takePicture(options: TakePictureOptions): Promise<Picture> {
  const { store, coverage, cache, signal, onProgress } = options;
  const deadline = options.deadline ?? Date.now() + coverage.maxPictureSeconds * 1000;
  const cached = cache?.records;
  const scan = await scanTree(options.projectRoot, coverage, {
    deadline,
    ...(signal !== undefined ? { signal } : {}),
    ...(options.exclude !== undefined ? { exclude: options.exclude } : {}),
    ...(cache?.ignores !== undefined ? { ignores: cache.ignores } : {}),
    ...(cached !== undefined ? { previous: cached, reuse: (record: StatRecord) => settled(record as PictureRecord, coverage) } : {}),
    ...(cache?.ignoreEpoch !== undefined ? { previousEpoch: cache.ignoreEpoch } : {}),
    ...(cache?.memo !== undefined ? { memo: cache.memo } : {}),
    ...(cache?.parallel !== undefined ? { parallel: cache.parallel } : {}),
    ...(options.readDir !== undefined ? { readDir: options.readDir } : {}),
  });
  const root = canonicalRoot(options.projectRoot);
  const gaps: Gap[] = [...scan.gaps];
  const toCopy: StatRecord[] = [];
  let reused = 0;
  for (const stat of scan.list) if ((stat as Partial<PictureRecord>).state !== undefined) reused++;
  // Nothing changed: every record is the cache's own object for its path and none is missing, so
  // the cache's map is this picture's map (no table to build; callers can compare maps by identity).
  const unchanged = cached instanceof Map && reused === scan.list.length && reused === cached.size;
  const records: Map<string, PictureRecord> = unchanged ? (cached as Map<string, PictureRecord>) : new Map<string, PictureRecord>();

  for (const stat of unchanged ? [] : scan.list) {
    // The scan hands back the earlier record itself when its stat is unchanged and settled.
    if ((stat as Partial<PictureRecord>).state !== undefined) {
      records.set(stat.path, stat as PictureRecord);
      continue;
    }
    if (stat.type === 'symlink') {
      records.set(stat.path, withState(stat, { type: 'symlink', target: stat.target ?? '' }));
      continue;
    }
    if (isCredentialPath(stat.path)) {
      records.set(stat.path, withState(stat, uncopiedState('credential', stat)));
      continue;
    }
    if (stat.size > coverage.maxFileBytes) {
      records.set(stat.path, withState(stat, uncopiedState('too-large', stat)));
      continue;
    }
    toCopy.push(stat);
  }
  const walked = scan.walked;
  // The scan's list is no longer needed; free it before the copies allocate.
  scan.list = [];
  onProgress?.({ phase: 'scan', walked: walked, toCopy: toCopy.length, copied: 0 });

  let copied = 0;
  let copiedBytes = 0;
  let reservedFiles = 0;
  let reservedBytes = 0;
  const budgetStops = new Set<BudgetStop>();
  const budgetSkipped: string[] = [];
  const results: (PictureRecord | undefined)[] = new Array<PictureRecord | undefined>(toCopy.length);

  type StoredRef = { object: string; hash: string; size: number; mode: number };
  /** Budget check and reservation; false when the file is left uncopied by a budget. */
  const reserve = (index: number, stat: StatRecord): boolean => {
    const stop =
      Date.now() > deadline
        ? 'time'
        : reservedFiles + 1 > coverage.maxPictureFiles
          ? 'files'
          : reservedBytes + stat.size > coverage.maxPictureBytes
            ? 'bytes'
            : undefined;
    if (stop !== undefined) {
      budgetStops.add(stop);
      budgetSkipped.push(stat.path);
      results[index] = withState(stat, uncopiedState('picture-budget', stat));
      return false;
    }
    reservedFiles += 1;
    reservedBytes += stat.size;
    return true;
  };
  const settle = (index: number, stat: StatRecord, ref: StoredRef | undefined, error: unknown): void => {
    if (ref !== undefined) {
      copied += 1;
      copiedBytes += ref.size;
      results[index] = withState(stat, { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: ref.mode & 0o7777 });
    } else {
      reservedFiles -= 1;
      reservedBytes -= stat.size;
      const reason = failureReason(error);
      gaps.push({ path: stat.path, reason, detail: `${stat.path}: ${FAILURE_DETAIL[reason]}` });
      results[index] = withState(stat, uncopiedState(reason, stat));
    }
    if (onProgress !== undefined && copied % PROGRESS_EVERY === 0) {
      onProgress({ phase: 'copy', walked: walked, toCopy: toCopy.length, copied });
    }
  };
  const absOf = (stat: StatRecord): string => (path.sep === '/' ? `${root}/${stat.path}` : path.join(root, ...stat.path.split('/')));
  /** Copies a file whose budget is reserved through the store's promise API. */
  const putReserved = async (index: number, stat: StatRecord): Promise<void> => {
    let ref: StoredRef;
    try {
      ref = await store.putFile(absOf(stat), { size: stat.size, mtimeMs: stat.mtimeMs });
    } catch (error) {
      settle(index, stat, undefined, error);
      return;
    }
    settle(index, stat, ref, undefined);
  };

  // Small files first, on this thread: no promise per file, and the event loop gets a turn every
  // few milliseconds. What the store cannot take synchronously waits for the concurrent copies.
  const later: number[] = [];
  const putSync = store.putFileSync?.bind(store);
  let lastYield = performance.now();
  for (let index = 0; index < toCopy.length; index++) {
    const stat = toCopy[index] as StatRecord;
    if (putSync === undefined || stat.size > SYNC_COPY_MAX_BYTES) {
      later.push(index);
      continue;
    }
    if (performance.now() - lastYield > YIELD_EVERY_MS) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      lastYield = performance.now();
    }
    signal?.throwIfAborted();
    if (!reserve(index, stat)) continue;
    let ref: StoredRef | undefined;
    try {
      ref = putSync(absOf(stat), { size: stat.size, mtimeMs: stat.mtimeMs });
    } catch (error) {
      settle(index, stat, undefined, error);
      continue;
    }
    if (ref !== undefined) {
      settle(index, stat, ref, undefined);
      continue;
    }
    // Not taken synchronously (a store not loaded yet, or a file that grew): through `putFile`
    // now, which also loads the store for the files after it.
    await putReserved(index, stat);
  }

  let next = 0;
  const copyOne = async (index: number): Promise<void> => {
    const stat = toCopy[index] as StatRecord;
    if (reserve(index, stat)) await putReserved(index, stat);
  };

  const worker = async (): Promise<void> => {
    while (next < later.length) {
      signal?.throwIfAborted();
      await copyOne(later[next++] as number);
    }
  };
  await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, later.length) }, worker));
  signal?.throwIfAborted();
  for (const record of results) if (record !== undefined) records.set(record.path, record);
  results.length = 0;
  if (toCopy.length > 0) onProgress?.({ phase: 'copy', walked: walked, toCopy: toCopy.length, copied });

  if (budgetStops.size > 0) {
    gaps.push({
      reason: 'picture-budget',
      detail: `${describeBudget(budgetStops, coverage)}: ${numberFormat.format(budgetSkipped.length)} file${budgetSkipped.length === 1 ? '' : 's'} not copied; a later picture copies them`,
    });
  }
  cache?.memo?.bind(scan.memoGeneration, records);
  const partial = scan.partial || budgetStops.size > 0;
  return {
    ignoreEpoch: scan.ignoreEpoch,
    records,
    partial,
    gaps,
    unchecked: scan.unchecked,
    copied,
    copiedBytes,
    summary: summarize(records.size, copied, partial, budgetSkipped, scan.unchecked),
  };
}

function canonicalRoot(projectRoot: string): string {
  // scanTree already resolved (and validated) the root; resolve the same way for copies.
  try {
    return realpathSync(projectRoot);
  } catch {
    return path.resolve(projectRoot);
  }
}

/**
 * True when an unchanged earlier record may stand as is: a stored copy, a symlink, or a file that
 * is still not copied for a reason its unchanged stat cannot change. Files left by a budget or a
 * failed copy are tried again.
 */
function settled(record: PictureRecord, coverage: ResolvedCoverage): boolean {
  const state = record.state;
  switch (state.type) {
    case 'file':
      return state.size === record.size;
    case 'symlink':
      return true;
    case 'uncopied':
      return state.reason === 'credential' || (state.reason === 'too-large' && record.size > coverage.maxFileBytes);
    default:
      return false;
  }
}

/**
 * Turns the scan's own record into a picture record in place: the scan result is private to
 * {@link takePicture}, and copying 100,000 records would double the peak memory of a picture.
 */
function withState(stat: StatRecord, state: PathState): PictureRecord {
  const record = stat as PictureRecord;
  record.state = state;
  return record;
}

function uncopiedState(reason: UncopiedReason, stat: StatRecord): PathState {
  return { type: 'uncopied', reason, size: stat.size, mode: stat.mode };
}

const FAILURE_DETAIL: Record<UncopiedReason, string> = {
  'too-large': 'no copy (over the size limit)',
  credential: 'no copy (credential file)',
  'picture-budget': 'no copy (picture budget)',
  'changed-during-capture': 'no copy (changed during capture)',
  unreadable: 'no copy (unreadable)',
  'store-busy': 'no copy (the checkpoint store is busy)',
  'store-full': 'no copy (the checkpoint store is full)',
};

function failureReason(error: unknown): UncopiedReason {
  if (isCheckpointError(error, 'CONFLICT')) return 'changed-during-capture';
  if (isCheckpointError(error, 'STORE_BUSY')) return 'store-busy';
  const code = errnoCode(error instanceof Error && error.cause !== undefined ? error.cause : error);
  if (code === 'ENOSPC' || code === 'EDQUOT') return 'store-full';
  if (code === 'ENOENT') return 'changed-during-capture';
  return 'unreadable';
}

function describeBudget(stops: Set<BudgetStop>, coverage: ResolvedCoverage): string {
  const parts: string[] = [];
  if (stops.has('files')) parts.push(`${numberFormat.format(coverage.maxPictureFiles)} files`);
  if (stops.has('bytes')) parts.push(`${coverage.maxPictureMib} MiB`);
  if (stops.has('time')) parts.push(`${coverage.maxPictureSeconds} s`);
  return `copy budget reached (${parts.join(', ')})`;
}

const UNCHECKED_WORDS: Record<UncheckedPath['reason'], string> = {
  unreadable: 'unreadable',
  'unreadable-name': 'unreadable name',
  'gitignore-unusable': '.gitignore unusable',
  'too-deep': 'too deep',
  'walk-entries': 'walk limit',
  'time-limit': 'time limit',
};

/** Builds the one-line summary; uncopied-by-budget files are grouped by their top folder. */
function summarize(total: number, copied: number, partial: boolean, budgetSkipped: string[], unchecked: UncheckedPath[]): string {
  if (!partial) return `checkpoint: ${numberFormat.format(total)} file${total === 1 ? '' : 's'}, ${numberFormat.format(copied)} copied`;
  const parts: string[] = [];
  if (budgetSkipped.length > 0) {
    const groups = new Map<string, number>();
    for (const p of budgetSkipped) {
      const slash = p.indexOf('/');
      const top = slash === -1 ? './' : `${p.slice(0, slash)}/`;
      groups.set(top, (groups.get(top) ?? 0) + 1);
    }
    const sorted = [...groups].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const shown = sorted.slice(0, 3);
    shown.forEach(([top, count], i) => {
      parts.push(`${numberFormat.format(count)}${i === 0 ? ` new file${count === 1 ? '' : 's'}` : ''} in ${top}`);
    });
    const rest = sorted.slice(3).reduce((sum, [, count]) => sum + count, 0);
    if (rest > 0) parts.push(`${numberFormat.format(rest)} elsewhere`);
  }
  parts.push(`${numberFormat.format(copied)} copied`);
  let sentence = `checkpoint partial: ${parts.join(', ')}`;
  if (unchecked.length > 0) {
    // One clause per reason, so a walk stopped with 800 folders left stays one readable line.
    const byReason = new Map<UncheckedPath['reason'], string[]>();
    for (const u of unchecked) {
      const list = byReason.get(u.reason) ?? [];
      list.push(u.path === '.' ? 'the project' : `${u.path}/`);
      byReason.set(u.reason, list);
    }
    const clauses = [...byReason].map(([reason, list]) =>
      list.length === 1 ? `${list[0]} (${UNCHECKED_WORDS[reason]})` : `${numberFormat.format(list.length)} folders (${UNCHECKED_WORDS[reason]}) such as ${list[0]}`,
    );
    sentence += `; not checked: ${clauses.join(', ')}`;
  }
  return sentence;
}

const CACHE_FORMAT = 'turnback-stat-cache';
const BASE_FORMAT = 'turnback-picture-base';
/**
 * Records per base chunk: each JSON string stays about 250 KB however large the tree. Chunks of
 * 8,192 (1 MB strings) measured about 10 MB more peak memory on a 100,000-file first picture
 * (big strings and their write buffers wait for a full collection); 512 measured the same as 2,048
 * but four times the fsyncs.
 */
const BASE_CHUNK = 2048;
const BASE_PREFIX = 'pic-';
/** Random base-36 digits after the time in a generation name. */
const GENERATION_RANDOM = 6;

/** Names a written base: its chunks are the state documents `pic-<generation>-<index>`. */
export interface PictureBaseRef {
  /** Lower-case letters and digits, unique per write. */
  generation: string;
  /** How many chunk documents. */
  chunks: number;
  /** How many records in all. */
  count: number;
}

/**
 * An immutable set of file records written once and shared by the stat cache and every call
 * baseline taken while it is current, so each of those persists only what differs from it.
 */
export interface PictureBase {
  readonly ref: PictureBaseRef;
  /**
   * The records written, by identity (what {@link pictureDelta} compares), possibly among other
   * records that a base never holds (symlinks, uncopied files): the map of the picture the base
   * was written from is shared rather than copied.
   */
  readonly records: ReadonlyMap<string, PictureRecord>;
}

/** A picture's records as persisted: a base plus what differs from it. */
export interface PersistedRecords {
  /** The base, or `null` when every record is in `records`. */
  base: PictureBaseRef | null;
  /** Records that are not in the base, or differ from it. */
  records: PictureRecord[];
  /** Base paths the picture does not hold. */
  removed: string[];
}

/** Tuple of a base record: path, size, mode, mtimeMs, ino, object, hash, and the stored mode when it differs. */
type CacheTuple = [string, number, number, number, number, string, string] | [string, number, number, number, number, string, string, number];

/** A record a base can hold: a file with a stored copy taken at this very stat. */
function baseable(record: PictureRecord): boolean {
  return record.type === 'file' && record.state.type === 'file' && record.state.size === record.size;
}

/**
 * What `records` holds beyond `base`: records that are not the base's own objects, and base
 * paths it lacks. O(records) with one map lookup each.
 */
export function pictureDelta(records: ReadonlyMap<string, PictureRecord>, base: PictureBase | undefined): PersistedRecords {
  const changed: PictureRecord[] = [];
  const removed: string[] = [];
  const inBase = base?.records;
  // forEach, not for-of: no [key, value] pair allocated per record of a 100,000-file picture.
  records.forEach((record, p) => {
    if (inBase === undefined || inBase.get(p) !== record || !baseable(record)) changed.push(record);
  });
  inBase?.forEach((record, p) => {
    if (baseable(record) && !records.has(p)) removed.push(p);
  });
  return { base: base?.ref ?? null, records: changed, removed };
}

/** Rebuilds a picture's records from its base and delta (the base's objects are shared). */
export function applyDelta(base: PictureBase | undefined, persisted: Pick<PersistedRecords, 'records' | 'removed'>): Map<string, PictureRecord> {
  const records = new Map<string, PictureRecord>();
  if (base !== undefined) for (const [p, record] of base.records) if (baseable(record)) records.set(p, record);
  for (const p of persisted.removed) records.delete(p);
  for (const record of persisted.records) records.set(record.path, record);
  return records;
}

/**
 * Writes the file records of `records` that have a stored copy as a new base, in chunks of
 * {@link BASE_CHUNK} (so no single JSON string grows with the tree).
 */
export async function writePictureBase(store: PictureStore, records: ReadonlyMap<string, PictureRecord>): Promise<PictureBase> {
  const generation = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** GENERATION_RANDOM).toString(36).padStart(GENERATION_RANDOM, '0')}`;
  let count = 0;
  let chunk: CacheTuple[] = [];
  let chunks = 0;
  const flush = async (): Promise<void> => {
    await store.writeState(`${BASE_PREFIX}${generation}-${chunks}`, { format: BASE_FORMAT, version: 1, generation, index: chunks, records: chunk }, NOT_DURABLE);
    chunks += 1;
    chunk = [];
  };
  for (const record of records.values()) {
    if (!baseable(record)) continue;
    const state = record.state as Extract<PathState, { type: 'file' }>;
    chunk.push(
      state.mode === record.mode
        ? [record.path, record.size, record.mode, record.mtimeMs, record.ino, state.object, state.hash]
        : [record.path, record.size, record.mode, record.mtimeMs, record.ino, state.object, state.hash, state.mode],
    );
    count += 1;
    if (chunk.length >= BASE_CHUNK) await flush();
  }
  if (chunk.length > 0 || chunks === 0) await flush();
  return { ref: { generation, chunks, count }, records };
}

/** Reads a base back; `undefined` when any chunk is missing or malformed (never half a base). */
export async function readPictureBase(store: PictureStore, ref: PictureBaseRef): Promise<PictureBase | undefined> {
  if (!isBaseRef(ref)) return undefined;
  const records = new Map<string, PictureRecord>();
  for (let index = 0; index < ref.chunks; index++) {
    let doc: unknown;
    try {
      doc = await store.readState(`${BASE_PREFIX}${ref.generation}-${index}`);
    } catch {
      return undefined;
    }
    if (typeof doc !== 'object' || doc === null) return undefined;
    const d = doc as { format?: unknown; version?: unknown; generation?: unknown; index?: unknown; records?: unknown };
    if (d.format !== BASE_FORMAT || d.version !== 1 || d.generation !== ref.generation || d.index !== index || !Array.isArray(d.records)) return undefined;
    for (const tuple of d.records as unknown[]) {
      const record = fromTuple(tuple);
      if (record === undefined) return undefined;
      records.set(record.path, record);
    }
  }
  if (records.size !== ref.count) return undefined;
  return { ref, records };
}

/**
 * Removes every base whose generation is not in `keep` and is older than `graceMs` (bases are
 * written rarely; an old one stays while a call baseline still names it). Best effort: a failure
 * leaves a document behind.
 */
export async function prunePictureBases(store: PictureStore, keep: ReadonlySet<string>, graceMs = 0): Promise<void> {
  if (store.listState === undefined) return;
  const names = await store.listState(BASE_PREFIX);
  const now = Date.now();
  for (const name of names) {
    const generation = name.slice(BASE_PREFIX.length, name.lastIndexOf('-'));
    if (keep.has(generation)) continue;
    // The generation starts with its creation time (base 36): a young one may be about to be named.
    const createdAt = Number.parseInt(generation.slice(0, -GENERATION_RANDOM), 36);
    if (!Number.isFinite(createdAt) || now - createdAt < graceMs) continue;
    try {
      if (store.deleteState !== undefined) await store.deleteState(name);
      else await store.writeState(name, null);
    } catch {
      // Left for the next prune.
    }
  }
}

/** A {@link PictureCache} loaded from the store, with the base it was saved against. */
export interface LoadedPictureCache extends PictureCache {
  /** The base the cache's delta refers to, when it could be read. */
  base?: PictureBase;
}

/**
 * Saves the reusable part of a picture under `state/<name>`: a reference to `base` plus the
 * records that differ from it, so a new process does not re-read an unchanged tree and a save
 * costs what changed, not what exists. Without a base every record is written inline. `delta` is
 * `pictureDelta(picture.records, base)` when the caller already has it.
 */
export async function savePictureCache(
  store: PictureStore,
  name: string,
  picture: PictureCache,
  base?: PictureBase,
  delta: PersistedRecords = pictureDelta(picture.records, base),
): Promise<void> {
  // Only stored copies save a read later; symlinks and uncopied files are cheap to classify again.
  await store.writeState(name, { format: CACHE_FORMAT, version: 2, base: delta.base, records: delta.records.filter(baseable), removed: delta.removed }, NOT_DURABLE);
}

/**
 * Loads a cache saved by {@link savePictureCache}. A missing or malformed document yields an
 * empty cache, and a missing base leaves just the inline records: the next picture then reads
 * more files, which is slower but never wrong.
 */
export async function loadPictureCache(store: PictureStore, name: string): Promise<LoadedPictureCache> {
  let doc: unknown;
  try {
    doc = await store.readState(name);
  } catch {
    return { records: new Map() };
  }
  if (typeof doc !== 'object' || doc === null || (doc as { format?: unknown }).format !== CACHE_FORMAT || (doc as { version?: unknown }).version !== 2) {
    return { records: new Map() };
  }
  const persisted = parsePersistedRecords(doc);
  if (persisted === undefined) return { records: new Map() };
  const base = persisted.base === null ? undefined : await readPictureBase(store, persisted.base);
  const records = applyDelta(base, persisted);
  return base === undefined ? { records } : { records, base };
}

/**
 * Validates the `base`, `records` and `removed` fields of a persisted document; `undefined` when
 * any is malformed (a torn or foreign document is never half-trusted).
 */
export function parsePersistedRecords(doc: unknown): PersistedRecords | undefined {
  if (typeof doc !== 'object' || doc === null) return undefined;
  const d = doc as { base?: unknown; records?: unknown; removed?: unknown };
  if (d.base !== null && !isBaseRef(d.base)) return undefined;
  if (!Array.isArray(d.records) || !Array.isArray(d.removed)) return undefined;
  const records: PictureRecord[] = [];
  for (const value of d.records as unknown[]) {
    const record = parseRecord(value);
    if (record === undefined) return undefined;
    records.push(record);
  }
  if (!(d.removed as unknown[]).every((p) => typeof p === 'string')) return undefined;
  return { base: d.base as PictureBaseRef | null, records, removed: d.removed as string[] };
}

function isBaseRef(value: unknown): value is PictureBaseRef {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<PictureBaseRef>;
  return typeof v.generation === 'string' && /^[a-z0-9]{1,40}$/.test(v.generation) && Number.isInteger(v.chunks) && Number.isInteger(v.count);
}

function fromTuple(tuple: unknown): PictureRecord | undefined {
  if (!Array.isArray(tuple) || (tuple.length !== 7 && tuple.length !== 8)) return undefined;
  const [p, size, mode, mtimeMs, ino, object, hash, stateMode] = tuple as unknown[];
  if (
    typeof p !== 'string' ||
    typeof size !== 'number' ||
    typeof mode !== 'number' ||
    typeof mtimeMs !== 'number' ||
    typeof ino !== 'number' ||
    typeof object !== 'string' ||
    typeof hash !== 'string' ||
    (stateMode !== undefined && typeof stateMode !== 'number')
  ) {
    return undefined;
  }
  return { path: p, type: 'file', size, mode, mtimeMs, ino, state: { type: 'file', object, hash, size, mode: (stateMode as number | undefined) ?? mode } };
}

const UNCOPIED_REASONS: ReadonlySet<string> = new Set(Object.keys(FAILURE_DETAIL));

/** Checks one record written as JSON (a delta entry). */
function parseRecord(value: unknown): PictureRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Partial<PictureRecord> & { state?: Partial<Record<string, unknown>> };
  if (typeof r.path !== 'string' || (r.type !== 'file' && r.type !== 'symlink')) return undefined;
  if (typeof r.size !== 'number' || typeof r.mode !== 'number' || typeof r.mtimeMs !== 'number' || typeof r.ino !== 'number') return undefined;
  if (r.target !== undefined && typeof r.target !== 'string') return undefined;
  const st = r.state;
  if (typeof st !== 'object' || st === null) return undefined;
  let state: PathState;
  if (st.type === 'file' && typeof st.object === 'string' && typeof st.hash === 'string' && typeof st.size === 'number' && typeof st.mode === 'number') {
    state = { type: 'file', object: st.object, hash: st.hash, size: st.size, mode: st.mode };
  } else if (st.type === 'symlink' && typeof st.target === 'string') {
    state = { type: 'symlink', target: st.target };
  } else if (st.type === 'uncopied' && typeof st.reason === 'string' && UNCOPIED_REASONS.has(st.reason) && typeof st.size === 'number' && typeof st.mode === 'number') {
    if (st.hash !== undefined && typeof st.hash !== 'string') return undefined;
    state = { type: 'uncopied', reason: st.reason as UncopiedReason, size: st.size, mode: st.mode, ...(typeof st.hash === 'string' ? { hash: st.hash } : {}) };
  } else {
    return undefined;
  }
  const record: PictureRecord = { path: r.path, type: r.type, size: r.size, mode: r.mode, mtimeMs: r.mtimeMs, ino: r.ino, state };
  if (r.target !== undefined) record.target = r.target;
  return record;
}
