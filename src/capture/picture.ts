import { realpathSync } from 'node:fs';
import * as path from 'node:path';
import type { Gap, PathState, UncopiedReason } from '../core/model.js';
import { errnoCode, isCheckpointError } from '../core/errors.js';
import { isCredentialPath, type IgnoreStack, type ResolvedCoverage } from './coverage.js';
import { scanTree, type StatRecord, type UncheckedPath } from './scan.js';

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
  /** Reads a small JSON document saved with {@link PictureStore.writeState}; `undefined` when absent. */
  readState(name: string): Promise<unknown>;
  /** Saves a small JSON document beside the store. */
  writeState(name: string, value: unknown): Promise<void>;
}

/** One covered path in a picture: its stat index entry plus the recorded state. */
export type PictureRecord = StatRecord & { state: PathState };

/**
 * A whole-tree picture. `records` is authoritative only outside `unchecked`: a path under an
 * unchecked folder is unknown, never "deleted".
 */
export interface Picture {
  /** Every covered file and symlink, keyed by project path. */
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
}

/** Files copied at once: enough to overlap reads and store writes, few enough to bound memory. */
const COPY_CONCURRENCY = 8;
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
  const scan = await scanTree(options.projectRoot, coverage, {
    deadline,
    ...(signal !== undefined ? { signal } : {}),
    ...(options.exclude !== undefined ? { exclude: options.exclude } : {}),
    ...(cache?.ignores !== undefined ? { ignores: cache.ignores } : {}),
  });
  const root = canonicalRoot(options.projectRoot);
  const records = new Map<string, PictureRecord>();
  const gaps: Gap[] = [...scan.gaps];
  const toCopy: StatRecord[] = [];
  const cached = cache?.records;

  for (const stat of scan.entries.values()) {
    const previous = cached?.get(stat.path);
    if (stat.type === 'symlink') {
      const target = stat.target ?? '';
      const reuse = previous !== undefined && previous.state.type === 'symlink' && previous.state.target === target && sameStat(previous, stat);
      records.set(stat.path, reuse ? previous : withState(stat, { type: 'symlink', target }));
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
    if (previous !== undefined && previous.state.type === 'file' && sameStat(previous, stat)) {
      records.set(stat.path, previous);
      continue;
    }
    toCopy.push(stat);
  }
  onProgress?.({ phase: 'scan', walked: scan.walked, toCopy: toCopy.length, copied: 0 });

  let copied = 0;
  let copiedBytes = 0;
  let reservedFiles = 0;
  let reservedBytes = 0;
  const budgetStops = new Set<BudgetStop>();
  const budgetSkipped: string[] = [];
  const results: (PictureRecord | undefined)[] = new Array<PictureRecord | undefined>(toCopy.length);
  let next = 0;

  const copyOne = async (index: number): Promise<void> => {
    const stat = toCopy[index] as StatRecord;
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
      return;
    }
    reservedFiles += 1;
    reservedBytes += stat.size;
    try {
      const ref = await store.putFile(path.join(root, ...stat.path.split('/')), { size: stat.size, mtimeMs: nsToMs(stat.mtimeNs) });
      copied += 1;
      copiedBytes += ref.size;
      results[index] = withState(stat, { type: 'file', object: ref.object, hash: ref.hash, size: ref.size, mode: ref.mode & 0o7777 });
    } catch (error) {
      reservedFiles -= 1;
      reservedBytes -= stat.size;
      const reason = failureReason(error);
      gaps.push({ path: stat.path, reason, detail: `${stat.path}: ${FAILURE_DETAIL[reason]}` });
      results[index] = withState(stat, uncopiedState(reason, stat));
    }
    if (onProgress !== undefined && copied % PROGRESS_EVERY === 0) {
      onProgress({ phase: 'copy', walked: scan.walked, toCopy: toCopy.length, copied });
    }
  };

  const worker = async (): Promise<void> => {
    while (next < toCopy.length) {
      signal?.throwIfAborted();
      await copyOne(next++);
    }
  };
  await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, toCopy.length) }, worker));
  signal?.throwIfAborted();
  for (const record of results) if (record !== undefined) records.set(record.path, record);
  if (toCopy.length > 0) onProgress?.({ phase: 'copy', walked: scan.walked, toCopy: toCopy.length, copied });

  if (budgetStops.size > 0) {
    gaps.push({
      reason: 'picture-budget',
      detail: `${describeBudget(budgetStops, coverage)}: ${numberFormat.format(budgetSkipped.length)} file${budgetSkipped.length === 1 ? '' : 's'} not copied; a later picture copies them`,
    });
  }
  const partial = scan.partial || budgetStops.size > 0;
  return {
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

function sameStat(a: StatRecord, b: StatRecord): boolean {
  return a.size === b.size && a.mtimeNs === b.mtimeNs && a.ino === b.ino && a.mode === b.mode && a.type === b.type;
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

/** Node's own `mtimeMs` formula, so the store's float comparison matches exactly. */
function nsToMs(mtimeNs: string): number {
  const ns = BigInt(mtimeNs);
  return Number(ns / 1_000_000_000n) * 1e3 + Number(ns % 1_000_000_000n) / 1e6;
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

/** A persisted record: path, size, mode, mtimeNs, ino, object, hash, and the stored mode when it differs. */
type CacheTuple = [string, number, number, string, string, string, string] | [string, number, number, string, string, string, string, number];

/**
 * Saves the reusable part of a picture (files with a stored copy) under `state/<name>`, as
 * compact tuples, so a new process does not re-read an unchanged tree.
 */
export async function savePictureCache(store: PictureStore, name: string, picture: PictureCache): Promise<void> {
  const records: CacheTuple[] = [];
  for (const record of picture.records.values()) {
    const state = record.state;
    // A stored size that differs from the stat means the file moved under the copy: not reusable.
    if (record.type !== 'file' || state.type !== 'file' || state.size !== record.size) continue;
    records.push(
      state.mode === record.mode
        ? [record.path, record.size, record.mode, record.mtimeNs, record.ino, state.object, state.hash]
        : [record.path, record.size, record.mode, record.mtimeNs, record.ino, state.object, state.hash, state.mode],
    );
  }
  await store.writeState(name, { format: CACHE_FORMAT, version: 1, records });
}

/**
 * Loads a cache saved by {@link savePictureCache}. A missing or malformed document yields an
 * empty cache: the next picture then reads every file, which is slower but never wrong.
 */
export async function loadPictureCache(store: PictureStore, name: string): Promise<PictureCache> {
  const records = new Map<string, PictureRecord>();
  let doc: unknown;
  try {
    doc = await store.readState(name);
  } catch {
    return { records };
  }
  if (typeof doc !== 'object' || doc === null) return { records };
  const { format, version, records: tuples } = doc as { format?: unknown; version?: unknown; records?: unknown };
  if (format !== CACHE_FORMAT || version !== 1 || !Array.isArray(tuples)) return { records };
  for (const tuple of tuples as unknown[]) {
    if (!Array.isArray(tuple) || (tuple.length !== 7 && tuple.length !== 8)) continue;
    const [p, size, mode, mtimeNs, ino, object, hash, stateMode] = tuple as unknown[];
    if (
      typeof p !== 'string' ||
      typeof size !== 'number' ||
      typeof mode !== 'number' ||
      typeof mtimeNs !== 'string' ||
      typeof ino !== 'string' ||
      typeof object !== 'string' ||
      typeof hash !== 'string' ||
      (stateMode !== undefined && typeof stateMode !== 'number')
    ) {
      continue;
    }
    records.set(p, {
      path: p,
      type: 'file',
      size,
      mode,
      mtimeNs,
      ino,
      state: { type: 'file', object, hash, size, mode: stateMode ?? mode },
    });
  }
  return { records };
}
