import type { StateWriteOptions } from '../store/store.js';
import { UNCOPIED_REASONS, type PathState, type UncopiedReason } from '../core/model.js';
import type { PictureCache, PictureRecord } from './picture.js';
import { readColumns, toColumns, type BaseTuple } from './base-columns.js';
import { FileRecord, pictured } from './stat-record.js';

// How pictures persist between processes: immutable picture bases written in chunks, and small
// documents (the stat cache head, call baselines) that hold only what differs from a base.

// The stat cache only saves re-reading files: without an fsync a power loss may cost one slower
// picture (a torn or missing document reads as no cache), never a wrong one.
const NOT_DURABLE: StateWriteOptions = { durable: false };

/** The store's small JSON documents (`state/`), as persistence uses them. `CheckpointStore` satisfies it. */
export interface StateDocuments {
  /** Reads a small JSON document saved with {@link StateDocuments.writeState}; `undefined` when absent. */
  readState(name: string): Promise<unknown>;
  /** Saves a small JSON document beside the store (atomically; fsynced unless `durable: false`). */
  writeState(name: string, value: unknown, options?: StateWriteOptions): Promise<void>;
  /** Lists state document names starting with `prefix`. Optional: without it old bases are kept. */
  listState?(prefix: string): Promise<string[]>;
  /** Removes a state document. Optional: without it a removed document is overwritten with `null`. */
  deleteState?(name: string): Promise<void>;
  /** What identifies a document as it is now (see `StateDocumentFolder.stateIdentity`). Optional: without it bases are not cached. */
  stateIdentity?(name: string): Promise<string | undefined>;
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
/**
 * Base chunks being compressed and written at once: libuv's pool has 4 threads; a few in flight
 * keep one busy while this thread builds the next chunk, without holding many chunks in memory.
 */
const BASE_WRITES_AT_ONCE = 3;
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

/** A record a base can hold: a file with a stored copy taken at this very stat. */
function baseable(record: PictureRecord): boolean {
  // Most records of a big picture repeat their stat (stat-record.ts): asked without a state object.
  if (record instanceof FileRecord && record.repeatsStat) return true;
  return record.type === 'file' && record.state.type === 'file' && record.state.size === record.size;
}

/**
 * What `records` holds beyond `base`: records that are not the base's own objects, and base
 * paths it lacks. O(records) with one map lookup each.
 */
export function pictureDelta(records: ReadonlyMap<string, PictureRecord>, base: PictureBase | undefined): PersistedRecords {
  const changed: PictureRecord[] = [];
  const removed: string[] = [];
  // A base just written from this very map (writePictureBase keeps it) holds each of its baseable
  // records and nothing else: the delta is the rest, told without a lookup per path (a first
  // picture of 250,000 files writes its base, then its call baseline asks this).
  if (base !== undefined && base.records === records) {
    records.forEach((record) => {
      if (!baseable(record)) changed.push(record);
    });
    return { base: base.ref, records: changed, removed };
  }
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

/**
 * {@link pictureDelta} of `records` from the delta `previous` of the map it was built over, when
 * only the `paths` may differ between the two (`PictureChange`) and the base is the same: a pass
 * over the previous delta and the changed paths, not over every record.
 */
export function deltaAfter(previous: PersistedRecords, records: ReadonlyMap<string, PictureRecord>, paths: readonly string[], base: PictureBase | undefined): PersistedRecords {
  const touched = new Set(paths);
  const changed = previous.records.filter((record) => !touched.has(record.path));
  const removed = previous.removed.filter((p) => !touched.has(p));
  const inBase = base?.records;
  for (const p of touched) {
    const record = records.get(p);
    if (record !== undefined) {
      if (inBase === undefined || inBase.get(p) !== record || !baseable(record)) changed.push(record);
      continue;
    }
    const based = inBase?.get(p);
    if (based !== undefined && baseable(based)) removed.push(p);
  }
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
export async function writePictureBase(store: StateDocuments, records: ReadonlyMap<string, PictureRecord>): Promise<PictureBase> {
  const generation = `${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** GENERATION_RANDOM).toString(36).padStart(GENERATION_RANDOM, '0')}`;
  let count = 0;
  let chunk: BaseTuple[] = [];
  let chunks = 0;
  // Writes under way: each chunk's JSON is made on this thread, its compression and write go on
  // while the next chunk is built (the store compresses a long document on libuv's thread pool).
  const writing: Promise<void>[] = [];
  const flush = async (): Promise<void> => {
    // Version 2: the records as columns (base-columns.ts); version 1 (tuples) is still read.
    const write = store.writeState(`${BASE_PREFIX}${generation}-${chunks}`, { format: BASE_FORMAT, version: 2, generation, index: chunks, count: chunk.length, ...toColumns(chunk) }, NOT_DURABLE);
    // Handled now, thrown where it is awaited: a failed write is not an unhandled rejection meanwhile.
    write.catch(() => undefined);
    writing.push(write);
    chunks += 1;
    chunk = [];
    if (writing.length >= BASE_WRITES_AT_ONCE) await writing.shift();
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
  await Promise.all(writing);
  return { ref: { generation, chunks, count }, records };
}

/**
 * Bases this process read, by their chunks' identities, newest last: a process that loads the same
 * base again and again — the command server opens a store per command — parses it once. A base is
 * written once and never changed (a new one gets a new generation), and each use checks every
 * chunk's path, inode, size and mtime again, so a removed or rewritten chunk is read afresh. The
 * records are frozen: every load shares them, each in a map of its own.
 */
const readBases = new Map<string, ReadonlyMap<string, PictureRecord>>();
/**
 * Bases {@link readBases} keeps (one per store a process works on at a time is the common case),
 * and records in all: the records are shared with the maps built from them, so what the cache
 * adds while they are in use is the map itself; past the bound the oldest base is dropped.
 */
const READ_BASES_KEPT = 4;
const READ_BASE_RECORDS_KEPT = 300_000;

/** The chunks' identities of a base, joined; `undefined` when the store cannot tell or a chunk is gone. */
async function baseIdentity(store: StateDocuments, ref: PictureBaseRef): Promise<string | undefined> {
  if (store.stateIdentity === undefined) return undefined;
  const parts: string[] = [];
  for (let index = 0; index < ref.chunks; index++) {
    const identity = await store.stateIdentity(`${BASE_PREFIX}${ref.generation}-${index}`);
    if (identity === undefined) return undefined;
    parts.push(identity);
  }
  return `${ref.count}\n${parts.join('\n')}`;
}

/** Reads a base back; `undefined` when any chunk is missing or malformed (never half a base). */
export async function readPictureBase(store: StateDocuments, ref: PictureBaseRef): Promise<PictureBase | undefined> {
  if (!isBaseRef(ref)) return undefined;
  const identity = await baseIdentity(store, ref);
  const known = identity === undefined ? undefined : readBases.get(identity);
  if (known !== undefined && identity !== undefined) {
    readBases.delete(identity);
    readBases.set(identity, known);
    return { ref, records: new Map(known) };
  }
  const records = await parseBaseChunks(store, ref);
  if (records === undefined) return undefined;
  if (identity !== undefined) {
    for (const record of records.values()) {
      Object.freeze(record.state);
      Object.freeze(record);
    }
    readBases.set(identity, new Map(records));
    let kept = 0;
    for (const base of readBases.values()) kept += base.size;
    for (const [oldest, base] of readBases) {
      if (readBases.size <= 1 || (readBases.size <= READ_BASES_KEPT && kept <= READ_BASE_RECORDS_KEPT)) break;
      readBases.delete(oldest);
      kept -= base.size;
    }
  }
  return { ref, records };
}

async function parseBaseChunks(store: StateDocuments, ref: PictureBaseRef): Promise<Map<string, PictureRecord> | undefined> {
  const records = new Map<string, PictureRecord>();
  for (let index = 0; index < ref.chunks; index++) {
    let doc: unknown;
    try {
      doc = await store.readState(`${BASE_PREFIX}${ref.generation}-${index}`);
    } catch {
      return undefined;
    }
    if (typeof doc !== 'object' || doc === null) return undefined;
    const d = doc as { format?: unknown; version?: unknown; generation?: unknown; index?: unknown; records?: unknown; count?: unknown };
    if (d.format !== BASE_FORMAT || d.generation !== ref.generation || d.index !== index) return undefined;
    if (d.version === 2) {
      const read = readColumns(doc as Record<string, unknown>, d.count as number, (p, size, mode, mtimeMs, ino, object, hash, stateMode) => {
        records.set(p, pictured(p, size, mode, mtimeMs, ino, { type: 'file', object, hash, size, mode: stateMode ?? mode, ino }));
      });
      if (!read) return undefined;
      continue;
    }
    if (d.version !== 1 || !Array.isArray(d.records)) return undefined;
    for (const tuple of d.records as unknown[]) {
      const record = fromTuple(tuple);
      if (record === undefined) return undefined;
      records.set(record.path, record);
    }
  }
  if (records.size !== ref.count) return undefined;
  return records;
}

/**
 * Removes every base whose generation is not in `keep` and is older than `graceMs` (bases are
 * written rarely; an old one stays while a call baseline still names it). Best effort: a failure
 * leaves a document behind.
 */
export async function prunePictureBases(store: StateDocuments, keep: ReadonlySet<string>, graceMs = 0): Promise<void> {
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
  store: StateDocuments,
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
export async function loadPictureCache(store: StateDocuments, name: string): Promise<LoadedPictureCache> {
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
  // Nothing beyond the base (the usual head): the base's own map, which readPictureBase built for
  // this load alone and holds only base records, serves as is instead of being copied.
  const records = base !== undefined && persisted.records.length === 0 && persisted.removed.length === 0 ? (base.records as Map<string, PictureRecord>) : applyDelta(base, persisted);
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
  return pictured(p, size, mode, mtimeMs, ino, { type: 'file', object, hash, size, mode: (stateMode as number | undefined) ?? mode, ino });
}


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
    state = { type: 'file', object: st.object, hash: st.hash, size: st.size, mode: st.mode, ...(typeof st.ino === 'number' ? { ino: st.ino } : {}) };
  } else if (st.type === 'symlink' && typeof st.target === 'string') {
    state = { type: 'symlink', target: st.target };
  } else if (st.type === 'uncopied' && typeof st.reason === 'string' && UNCOPIED_REASONS.has(st.reason) && typeof st.size === 'number' && typeof st.mode === 'number') {
    if (st.hash !== undefined && typeof st.hash !== 'string') return undefined;
    state = { type: 'uncopied', reason: st.reason as UncopiedReason, size: st.size, mode: st.mode, ...(typeof st.hash === 'string' ? { hash: st.hash } : {}) };
  } else {
    return undefined;
  }
  if (r.type === 'file' && r.target === undefined) return pictured(r.path, r.size, r.mode, r.mtimeMs, r.ino, state);
  const record: PictureRecord = { path: r.path, type: r.type, size: r.size, mode: r.mode, mtimeMs: r.mtimeMs, ino: r.ino, state };
  if (r.target !== undefined) record.target = r.target;
  return record;
}
