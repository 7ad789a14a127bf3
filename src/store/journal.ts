import { closeSync, constants as fsConstants, openSync, writeSync } from 'node:fs';
import { CheckpointError, asCheckpointError } from '../core/errors.js';
import { contentHash, loadHasher } from '../core/hash.js';
import { isCheckpointId } from '../core/id.js';
import type { CallRecord, CheckpointMeta, Fingerprint, Gap, ManifestEntry, PathState } from '../core/model.js';
import { descriptorsOfDropped, type FileSystem } from '../fs/file-system.js';
import { HOSTNAME, createExclusive, type StoreLayout } from './layout.js';
import { isCheckpointKind, isRecordedPath, validateCallRecord, validateGap, validatePathState } from './manifests.js';

/**
 * One line of an open checkpoint's journal. The journal is append-only; {@link foldJournal}
 * turns the records into manifest entries.
 */
export type JournalRecord =
  /** The state of `path` before a change (only the first per path counts): the entry's `before`. */
  | ({ op: 'before'; state: PathState } & EntryFields<'path' | 'callId'>)
  /** The fingerprint of `path` after a change (the last per path counts): the entry's `after`. */
  | ({ op: 'after'; after: Fingerprint } & EntryFields<'path' | 'afterMode' | 'callId'>)
  /** Attribution for `path` is unreliable: the entry's `incomplete`. */
  | ({ op: 'incomplete' } & EntryFields<'path' | 'callId'>)
  /** Something was not captured. */
  | { op: 'gap'; gap: Gap }
  /** A call started or ended; a later record with the same `callId` replaces the earlier one. */
  | { op: 'call'; call: CallRecord }
  /** A label or completeness change. */
  | { op: 'meta'; label?: string; complete?: boolean };

/** Fields a journal record shares with the manifest entry it folds into. */
type EntryFields<K extends keyof ManifestEntry> = Pick<ManifestEntry, K>;

/** The metadata a journal's header carries: everything of the manifest known when it opens. */
export type JournalMeta = Pick<CheckpointMeta, 'id' | 'kind' | 'sessionId' | 'label' | 'createdAt' | 'workspace' | 'restoreOf' | 'scopeId'>;

/** The first line of every journal. `pid`/`hostname` let prune tell a live writer from a crashed one. */
export interface JournalHeader {
  op: 'header';
  format: 'turnback-journal';
  version: 1;
  meta: JournalMeta;
  pid: number;
  hostname: string;
}

/** A journal as read back. */
export interface JournalContents {
  /** `undefined` when the first line is missing or does not check out. */
  header: JournalHeader | undefined;
  records: JournalRecord[];
  /** True when the last line was torn (a crash mid-append); it was dropped. */
  tornTail: boolean;
  /** Lines other than the last that failed their checksum or schema; they were dropped. */
  corruptLines: number;
}

/** Serialises one journal line: JSON, a tab, the xxh64 of the JSON. Call `loadHasher` first. */
export function encodeJournalLine(value: JournalRecord | JournalHeader): string {
  const json = JSON.stringify(value);
  return `${json}\t${contentHash(Buffer.from(json))}\n`;
}

function decodeLine(line: string): unknown {
  const tab = line.lastIndexOf('\t');
  if (tab < 0) return undefined;
  const json = line.slice(0, tab);
  if (contentHash(Buffer.from(json)) !== line.slice(tab + 1)) return undefined;
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

function isOptionalString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

/** Checks a record's shape; returns a reason when invalid. */
export function journalRecordProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const r = value as Record<string, unknown>;
  switch (r.op) {
    case 'before':
      if (!isRecordedPath(r.path)) return 'before: bad path';
      if (!isOptionalString(r.callId)) return 'before: bad callId';
      return validatePathState(r.state);
    case 'after':
      if (!isRecordedPath(r.path)) return 'after: bad path';
      if (typeof r.after !== 'string') return 'after: bad fingerprint';
      if (r.afterMode !== undefined && !(Number.isInteger(r.afterMode) && (r.afterMode as number) >= 0)) return 'after: bad mode';
      return isOptionalString(r.callId) ? undefined : 'after: bad callId';
    case 'incomplete':
      if (!isRecordedPath(r.path)) return 'incomplete: bad path';
      return isOptionalString(r.callId) ? undefined : 'incomplete: bad callId';
    case 'gap':
      return validateGap(r.gap);
    case 'call':
      return validateCallRecord(r.call);
    case 'meta':
      if (!isOptionalString(r.label)) return 'meta: bad label';
      return r.complete === undefined || typeof r.complete === 'boolean' ? undefined : 'meta: bad complete';
    default:
      return `unknown op ${JSON.stringify(r.op)}`;
  }
}

function isHeader(value: unknown): value is JournalHeader {
  if (typeof value !== 'object' || value === null) return false;
  const h = value as Record<string, unknown>;
  const meta = h.meta as Record<string, unknown> | undefined;
  return (
    h.op === 'header' &&
    h.format === 'turnback-journal' &&
    h.version === 1 &&
    Number.isInteger(h.pid) &&
    typeof h.hostname === 'string' &&
    typeof meta === 'object' &&
    meta !== null &&
    isCheckpointId(meta.id) &&
    isCheckpointKind(meta.kind) &&
    typeof meta.createdAt === 'string' &&
    typeof meta.workspace === 'string' &&
    isOptionalString(meta.sessionId) &&
    isOptionalString(meta.label) &&
    isOptionalString(meta.scopeId) &&
    (meta.restoreOf === undefined || isCheckpointId(meta.restoreOf))
  );
}

/** Parses journal text. Pure apart from hashing (call `loadHasher` first). */
export function parseJournal(text: string): JournalContents {
  const lines = text.split('\n');
  // A complete journal ends with '\n', so the final element is '' unless the last append was torn.
  const last = lines.pop();
  const tornTail = last !== undefined && last !== '';
  let header: JournalHeader | undefined;
  const records: JournalRecord[] = [];
  let corruptLines = 0;
  lines.forEach((line, index) => {
    const value = decodeLine(line);
    if (index === 0) {
      if (isHeader(value)) header = value;
      else corruptLines += 1;
      return;
    }
    if (value === undefined || journalRecordProblem(value) !== undefined) {
      corruptLines += 1;
      return;
    }
    records.push(value as JournalRecord);
  });
  return { header, records, tornTail, corruptLines };
}

/** Reads and parses a journal file. */
export async function readJournal(fs: FileSystem, file: string): Promise<JournalContents> {
  await loadHasher();
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    throw asCheckpointError(error, 'cannot read journal', file);
  }
  return parseJournal(text);
}

/** The folded form of a journal: what a sealed manifest holds beyond the header metadata. */
export interface FoldedJournal {
  entries: ManifestEntry[];
  gaps: Gap[];
  calls: CallRecord[];
  /** Last label set by a `meta` record. */
  label?: string;
  /** Last completeness set by a `meta` record. */
  complete?: boolean;
}

/**
 * Folds journal records into manifest data. Pure. Per path: the first `before` wins, the last
 * `after` wins (and its `callId`), `incomplete` marks the entry. A path with an `after` or
 * `incomplete` but no `before` has no pre-image: it becomes a gap rather than an entry.
 * Entries are sorted by path; calls keep first-seen order, later records replacing earlier ones.
 */
export function foldJournal(records: readonly JournalRecord[]): FoldedJournal {
  interface Acc {
    before?: PathState;
    after?: Fingerprint;
    afterMode?: number;
    callId?: string;
    incomplete?: boolean;
  }
  const paths = new Map<string, Acc>();
  const gaps: Gap[] = [];
  const calls = new Map<string, CallRecord>();
  const folded: FoldedJournal = { entries: [], gaps, calls: [] };
  const acc = (p: string): Acc => {
    let entry = paths.get(p);
    if (!entry) {
      entry = {};
      paths.set(p, entry);
    }
    return entry;
  };
  for (const record of records) {
    switch (record.op) {
      case 'before': {
        const entry = acc(record.path);
        if (entry.before === undefined) {
          entry.before = record.state;
          if (record.callId !== undefined && entry.callId === undefined) entry.callId = record.callId;
        }
        break;
      }
      case 'after': {
        const entry = acc(record.path);
        entry.after = record.after;
        entry.afterMode = record.afterMode;
        if (record.callId !== undefined) entry.callId = record.callId;
        break;
      }
      case 'incomplete':
        acc(record.path).incomplete = true;
        break;
      case 'gap':
        gaps.push(record.gap);
        break;
      case 'call':
        calls.set(record.call.callId, record.call);
        break;
      case 'meta':
        if (record.label !== undefined) folded.label = record.label;
        if (record.complete !== undefined) folded.complete = record.complete;
        break;
      default: {
        const never: never = record;
        throw new CheckpointError('CORRUPT_MANIFEST', `unknown journal record ${JSON.stringify(never)}`);
      }
    }
  }
  for (const p of [...paths.keys()].sort(comparePaths)) {
    const a = paths.get(p) as Acc;
    if (a.before === undefined) {
      gaps.push({ path: p, reason: 'no-pre-image', detail: 'a change was recorded without a state before it' });
      continue;
    }
    const entry: ManifestEntry = { path: p, before: a.before };
    if (a.after !== undefined) entry.after = a.after;
    if (a.afterMode !== undefined) entry.afterMode = a.afterMode;
    if (a.callId !== undefined) entry.callId = a.callId;
    if (a.incomplete) entry.incomplete = true;
    folded.entries.push(entry);
  }
  folded.calls = [...calls.values()];
  return folded;
}

/** The entries of {@link foldJournal}, sorted by path. */
export function fold(records: readonly JournalRecord[]): ManifestEntry[] {
  return foldJournal(records).entries;
}

/** Code-unit order, so the order is the same on every platform and locale. */
export function comparePaths(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Closes the descriptor of a journal writer collected without `close` (Node would warn, DEP0137, for a FileHandle). */
/** How long {@link JournalWriter.appendSoon} may keep a line before writing it. */
const SOON_MS = 20;
/** Writers holding "soon" lines: written at process exit (normal exit runs no timers). */
const writingSoon = new Set<JournalWriter>();
let exitWatched = false;

function watchExit(): void {
  if (exitWatched) return;
  exitWatched = true;
  process.on('exit', () => {
    for (const writer of [...writingSoon]) writer.flushSoon();
  });
}

const abandoned = descriptorsOfDropped;

/**
 * Appends records to one open checkpoint's journal through a descriptor kept open, so an append
 * costs one synchronous `write` (a few microseconds for a line of a few hundred bytes, against a
 * thread-pool round trip for the promise API) whatever the journal's length. Because every
 * append completes before `append` returns, records land in call order.
 * Not fsynced: a process crash loses at most the line being written (dropped on read as torn).
 */
export class JournalWriter {
  /** The journal file. */
  readonly file: string;
  private fd: number | undefined;
  private failure: unknown;
  /** Records appended with {@link JournalWriter.appendSoon}, not written yet. */
  private soon: JournalRecord[] = [];
  private soonTimer: NodeJS.Timeout | undefined;

  private constructor(file: string, fd: number) {
    this.file = file;
    this.fd = fd;
    // A writer dropped without close (an abandoned checkpoint) must not leak its descriptor.
    // Unregistered by close(), so a descriptor number reused after close is never touched.
    abandoned.register(this, fd, this);
  }

  /**
   * Creates the journal atomically with its header (temp file linked into place), so a crash
   * never leaves a headerless journal, then opens it for appending.
   *
   * @throws CheckpointError `IO` when the journal exists already or cannot be created.
   */
  static async create(fs: FileSystem, layout: StoreLayout, meta: JournalMeta): Promise<JournalWriter> {
    await loadHasher();
    const file = layout.journalPath(meta.id);
    const header: JournalHeader = { op: 'header', format: 'turnback-journal', version: 1, meta, pid: process.pid, hostname: HOSTNAME };
    try {
      if (!(await createExclusive(fs, layout, file, encodeJournalLine(header)))) {
        throw new CheckpointError('IO', `journal already exists: ${meta.id}`, { path: file });
      }
      // A raw descriptor, not a FileHandle: closed explicitly by close(), never left to the GC.
      return new JournalWriter(file, openSync(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_NOFOLLOW));
    } catch (error) {
      throw asCheckpointError(error, 'cannot create journal', file);
    }
  }

  /**
   * Appends one record (synchronously; the promise is already settled when returned).
   *
   * @throws CheckpointError `INVALID_ARGUMENT` for a malformed record or a closed writer; `IO`
   *   when the write fails (later appends then fail too: the journal may have a hole).
   */
  append(record: JournalRecord): Promise<void> {
    return this.appendMany([record]);
  }

  /**
   * Appends records in order with one `write` (a restore's closing records: one system call, not
   * one per file). All are checked before any is written.
   *
   * @throws CheckpointError as {@link JournalWriter.append}.
   */
  appendMany(records: readonly JournalRecord[]): Promise<void> {
    // Lines written "soon" land first: the journal keeps call order.
    this.flushSoon();
    for (const record of records) {
      const problem = journalRecordProblem(record);
      if (problem !== undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `invalid journal record: ${problem}`));
    }
    const fd = this.fd;
    if (fd === undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', 'journal is closed', { path: this.file }));
    if (this.failure !== undefined) return Promise.reject(asCheckpointError(this.failure, 'journal write failed earlier', this.file));
    if (records.length === 0) return Promise.resolve();
    const lines = Buffer.from(records.length === 1 ? encodeJournalLine(records[0] as JournalRecord) : records.map(encodeJournalLine).join(''), 'utf8');
    try {
      // O_APPEND and one write for the lines: they are never interleaved with another writer's.
      let done = 0;
      while (done < lines.length) done += writeSync(fd, lines, done, lines.length - done);
    } catch (error) {
      this.failure = error;
      return Promise.reject(asCheckpointError(error, 'cannot append to journal', this.file));
    }
    return Promise.resolve();
  }

  /**
   * Appends a record that supersedes an earlier one (a repeat touch's `after`), written within
   * {@link SOON_MS} or before the next append, close or process exit, whichever comes first: a
   * repeat touch then costs no system call of its own. A crash in between leaves the earlier
   * record as the last one, which a restore reads as "changed since" and refuses, with the
   * pre-image intact.
   *
   * @throws CheckpointError as {@link JournalWriter.append}.
   */
  appendSoon(record: JournalRecord): Promise<void> {
    const problem = journalRecordProblem(record);
    if (problem !== undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `invalid journal record: ${problem}`));
    if (this.fd === undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', 'journal is closed', { path: this.file }));
    if (this.failure !== undefined) return Promise.reject(asCheckpointError(this.failure, 'journal write failed earlier', this.file));
    // Encoded when written: a repeat touch costs a push here.
    this.soon.push(record);
    if (this.soonTimer === undefined) {
      this.soonTimer = setTimeout(() => this.flushSoon(), SOON_MS);
      this.soonTimer.unref();
      writingSoon.add(this);
      watchExit();
    }
    return Promise.resolve();
  }

  /** Writes the lines {@link JournalWriter.appendSoon} kept (one `write`). A failure fails the journal. */
  flushSoon(): void {
    if (this.soonTimer !== undefined) {
      clearTimeout(this.soonTimer);
      this.soonTimer = undefined;
      writingSoon.delete(this);
    }
    if (this.soon.length === 0) return;
    const lines = Buffer.from(this.soon.map(encodeJournalLine).join(''), 'utf8');
    this.soon = [];
    const fd = this.fd;
    if (fd === undefined || this.failure !== undefined) return;
    try {
      let done = 0;
      while (done < lines.length) done += writeSync(fd, lines, done, lines.length - done);
    } catch (error) {
      this.failure = error;
    }
  }

  /** Closes the descriptor. Idempotent. */
  async close(): Promise<void> {
    this.flushSoon();
    const fd = this.fd;
    if (fd === undefined) return;
    this.fd = undefined;
    abandoned.unregister(this);
    closeSync(fd);
  }

  /** True until {@link close}. */
  get isOpen(): boolean {
    return this.fd !== undefined;
  }

  /** The first append error, if any: sealing refuses a journal with a hole. */
  get failed(): unknown {
    return this.failure;
  }
}
