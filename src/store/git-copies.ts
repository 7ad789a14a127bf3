import * as nodeFs from 'node:fs';
import { detachedCopy } from '../core/flat-string.js';
import { CheckpointError } from '../core/errors.js';
import { gitBlobIdOf, isGitBlob } from '../core/git-blob.js';
import { FILE_MODE } from './layout.js';
import { isObjectKey } from './object-codec.js';
import { readGitBlob } from './git-blobs.js';
import { loadReferences, stateReferences } from './references.js';
import type { StoreContext } from './retention.js';

// The store's own copies of git blobs that checkpoints and pictures rest on (issue #28). A file
// recorded by its blob id (`git:<id>`) keeps that key in every manifest and picture that names
// it; its copy is an ordinary object of the store (deduplicated, in the picture blocks' packs),
// and `objects/git-copies` says which: one line `<blob id> <object key>` per copy, appended under
// the store lock once the object is on disk. So one copy protects every checkpoint resting on the
// blob, old and new, and no manifest is ever rewritten. A read of `git:<id>` takes the copy first
// (checked against the id) and git only when the store has none; prune keeps a copy while any
// document names its git key and drops the line and the object after. The file is read with
// `node:fs` directly (like packs and journals): small appends on a descriptor, read as it grows.

/** A line of the index: a blob id, a space, an object key. */
const LINE = /^([0-9a-f]{40}|[0-9a-f]{64}) (\S+)$/;

/**
 * How far a reader had read the copies' index: its file and the bytes up to its last complete
 * line ({@link GitCopies.mark}). A later reader that starts there ({@link GitCopies.readFrom})
 * reads only the lines appended since.
 */
export interface GitCopiesMark {
  readonly identity: string;
  readonly read: number;
}

/** The index of the store's copies of git blobs, as this process last read it. */
export class GitCopies {
  readonly #file: string;
  #copies = new Map<string, string>();
  /** Bytes read so far (up to the last complete line), and the file they came from. */
  #read = 0;
  #identity = '';
  #endsWithNewline = true;
  /** Started at a mark ({@link readFrom}): the lines before it were never read. */
  #partial = false;

  constructor(file: string) {
    this.#file = file;
  }

  /** The index file's path. */
  get file(): string {
    return this.#file;
  }

  /** Reads what other processes appended since (the whole file again when it was rewritten). */
  refresh(): void {
    let fd: number;
    try {
      fd = nodeFs.openSync(this.#file, nodeFs.constants.O_RDONLY | nodeFs.constants.O_NOFOLLOW);
    } catch {
      this.#copies = new Map();
      this.#read = 0;
      this.#identity = '';
      this.#endsWithNewline = true;
      return;
    }
    try {
      const stat = nodeFs.fstatSync(fd);
      const identity = `${stat.dev}:${stat.ino}`;
      if (identity !== this.#identity || stat.size < this.#read) {
        this.#copies = new Map();
        this.#read = 0;
        this.#identity = identity;
        this.#partial = false;
      }
      if (stat.size === this.#read) return;
      const bytes = Buffer.alloc(stat.size - this.#read);
      const got = nodeFs.readSync(fd, bytes, 0, bytes.length, this.#read);
      const text = bytes.toString('latin1', 0, got);
      const complete = text.lastIndexOf('\n') + 1;
      for (const line of text.slice(0, complete).split('\n')) {
        const match = LINE.exec(line);
        if (match !== null && isObjectKey(match[2])) this.#copies.set(match[1] as string, match[2] as string);
      }
      this.#read += complete;
      this.#endsWithNewline = complete === got;
    } finally {
      nodeFs.closeSync(fd);
    }
  }

  /** Where this reader stands in the file, for a later reader's {@link readFrom} (read up to the end first). */
  mark(): GitCopiesMark {
    this.refresh();
    return { identity: this.#identity, read: this.#read };
  }

  /**
   * Starts this reader at `mark` instead of the file's start: the lines before it are not read,
   * so {@link get} answers only for copies appended since. For a reader that knows nothing before
   * the mark matters to it (the idle copier taking up a list made from the index up to there: at
   * 250,000 blobs the whole index is ~26 MB, and reading it again for each idle moment was one
   * uninterruptible stretch and a map of every copy made each time). A file rewritten since (prune
   * keeps only some lines, by rename) or shorter is read whole, as without a mark. Call it before
   * anything else reads this reader.
   */
  readFrom(mark: GitCopiesMark): void {
    if (this.#read !== 0 || this.#copies.size !== 0) return;
    let stat: nodeFs.Stats;
    try {
      stat = nodeFs.statSync(this.#file);
    } catch {
      return;
    }
    if (`${stat.dev}:${stat.ino}` !== mark.identity || stat.size < mark.read) return;
    this.#identity = mark.identity;
    this.#read = mark.read;
    // The mark stands at a line's end (refresh reads up to the last complete line).
    this.#endsWithNewline = true;
    this.#partial = true;
  }

  /** Reads the whole file again when this reader started at a mark: for the answers that need every copy. */
  #whole(): void {
    if (!this.#partial) return;
    this.#copies = new Map();
    this.#read = 0;
    this.#identity = '';
    this.#partial = false;
    this.refresh();
  }

  /** The object key of the store's copy of blob `id`, as far as this process knows (call {@link refresh} first to see others' copies). */
  get(id: string): string | undefined {
    return this.#copies.get(id);
  }

  /** The blob ids with a copy. */
  ids(): IterableIterator<string> {
    this.#whole();
    return this.#copies.keys();
  }

  /** Adds copies, once their objects are on disk; the caller holds the store lock. */
  append(entries: readonly (readonly [string, string])[]): void {
    if (entries.length === 0) return;
    this.refresh();
    // A line a killed writer left half written is ended first, so the new ones parse.
    const text = `${this.#endsWithNewline ? '' : '\n'}${entries.map(([id, key]) => `${id} ${key}\n`).join('')}`;
    const fd = nodeFs.openSync(this.#file, nodeFs.constants.O_WRONLY | nodeFs.constants.O_APPEND | nodeFs.constants.O_CREAT | nodeFs.constants.O_NOFOLLOW, FILE_MODE);
    try {
      nodeFs.writeSync(fd, text);
    } finally {
      nodeFs.closeSync(fd);
    }
    this.refresh();
  }

  /** Keeps only the copies `keep` says (temp file + rename); the caller holds the store lock. Returns the ids dropped. */
  rewrite(keep: (id: string) => boolean, tempPath: string): string[] {
    this.#whole();
    this.refresh();
    const dropped = [...this.#copies.keys()].filter((id) => !keep(id));
    if (dropped.length === 0) return [];
    const kept = [...this.#copies].filter(([id]) => keep(id));
    if (kept.length === 0) nodeFs.rmSync(this.#file, { force: true });
    else {
      nodeFs.writeFileSync(tempPath, kept.map(([id, key]) => `${id} ${key}\n`).join(''), { mode: FILE_MODE, flag: 'wx' });
      nodeFs.renameSync(tempPath, this.#file);
    }
    this.refresh();
    return dropped;
  }
}

/** What the copies need of the store: its context, and its index. */
export interface GitCopyContext extends Pick<StoreContext, 'fs' | 'layout' | 'objects' | 'projectRoot' | 'withLock'> {
  copies: GitCopies;
}

/**
 * The bytes of `git:<id>`: the store's copy when it has a good one (checked against the id), else
 * git's blob (checked too).
 * @throws CheckpointError `INTEGRITY` when neither has it.
 */
export async function readGitObject(ctx: GitCopyContext, id: string): Promise<Buffer> {
  const copy = await storeCopy(ctx, id);
  if (copy !== undefined) return copy;
  return readGitBlob(ctx.projectRoot, id);
}

/** The store's copy of blob `id` when it has one that reads back as that blob. */
async function storeCopy(ctx: GitCopyContext, id: string): Promise<Buffer | undefined> {
  let key = ctx.copies.get(id);
  if (key === undefined) {
    ctx.copies.refresh();
    key = ctx.copies.get(id);
  }
  if (key === undefined) return undefined;
  try {
    const bytes = await ctx.objects.readObject(key);
    return isGitBlob(bytes, id) ? bytes : undefined;
  } catch {
    // A missing or damaged copy: git may still have the blob.
    return undefined;
  }
}

/** True when the store holds a copy of blob `id` (its object file exists; content not checked). */
export async function hasGitCopy(ctx: GitCopyContext, id: string): Promise<boolean> {
  ctx.copies.refresh();
  const key = ctx.copies.get(id);
  return key !== undefined && (await ctx.objects.hasObject(key));
}

/**
 * The blob ids the store's documents rest on and it holds no copy of, most wanted first: the
 * state documents' (the current pictures: the pre-images a next change points at), then each
 * checkpoint's, newest first.
 */
export async function restingOnGit(ctx: GitCopyContext): Promise<string[]>;
/**
 * As above, with `shouldStop` asked between its two reads (a turn of the event loop before each)
 * and, with `perDocument`, before each document of those reads too: `undefined` when it said stop.
 */
export async function restingOnGit(ctx: GitCopyContext, shouldStop: () => boolean, perDocument?: boolean): Promise<string[] | undefined>;
export async function restingOnGit(ctx: GitCopyContext, shouldStop?: () => boolean, perDocument = false): Promise<string[] | undefined> {
  // The reads of the state documents and of the checkpoints stop between the two once a command
  // arrived, and with `perDocument` between two documents (each read is an await, so a command's
  // own steps would otherwise run interleaved with the rest of the read): what was read is
  // dropped, and the next idle moment looks again.
  const giveWay = async (): Promise<boolean> => {
    if (shouldStop === undefined) return false;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return shouldStop();
  };
  const state = shouldStop === undefined || !perDocument ? await stateReferences(ctx) : await stateReferences(ctx, shouldStop);
  if (state === undefined || (await giveWay())) return undefined;
  const held = shouldStop === undefined || !perDocument ? await loadReferences(ctx) : await loadReferences(ctx, shouldStop);
  if (held === undefined || (await giveWay())) return undefined;
  held.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  ctx.copies.refresh();
  const wanted = new Set<string>();
  const seen = new Set<string>();
  for (const key of [...state.gitKeys, ...held.flatMap((item) => [...item.refs])]) {
    const id = gitBlobIdOf(key);
    if (id === undefined || seen.has(id)) continue;
    seen.add(id);
    // A line naming an object the store no longer has (a crash between prune's two steps, a lost pack) counts as no copy.
    const copy = ctx.copies.get(id);
    // The id is a slice of its key: a flat copy, so the copier's long-lived list holds the 40 digits alone.
    if (copy === undefined || !(await ctx.objects.hasObject(copy))) wanted.add(detachedCopy(id));
  }
  return [...wanted];
}

/** Options of {@link copyGitBlobsIn}. */
export interface GitCopyOptions {
  /** At most this many blobs. @default no limit */
  maxFiles?: number;
  /** At most this many bytes (a blob larger than what is left waits for a later run). @default no limit */
  maxBytes?: number;
  /** Blobs read between two looks at `shouldStop` (and two turns of the event loop). @default 64 */
  sliceFiles?: number;
  /** Asked between slices: `true` ends the run (the server: a command arrived); what was read so far is still written and named. */
  shouldStop?: () => boolean;
  /**
   * `shouldStop` is asked before each document read to find what rests on git, too (the server:
   * at 250,000 files that read is over a hundred documents, about a second). A read it stops is
   * lost: the next run reads afresh. @default false: asked only after each of the two reads
   */
  stopWhileReading?: boolean;
  /**
   * The blob ids to copy, as a stopped run's {@link GitCopyReport.rest} left them: the run takes
   * them up where it stopped instead of reading every document again (about a second at 250,000
   * files; a read that `shouldStop` stops is lost). An id copied meanwhile (prune, another
   * process) is skipped. @default every blob the store rests on ({@link restingOnGit})
   */
  wanted?: readonly string[];
  /**
   * With `wanted`: how far the run that left it had read the copies' index
   * ({@link GitCopyReport.mark}); this run reads only the lines appended since (an id copied
   * meanwhile is still skipped). @default the whole index
   */
  wantedSince?: GitCopiesMark;
}

/** What {@link copyGitBlobsIn} did. */
export interface GitCopyReport {
  /** Blobs copied into the store. */
  copied: number;
  /** Their bytes. */
  bytes: number;
  /** Blob ids still resting only on git after the run (the budget, a stop, or git lost them). */
  left: number;
  /** Of `left`, the blobs git could not give (garbage-collected, or not that blob): their pre-images are lost. */
  lost: number;
  /** True when `shouldStop` ended the run early. */
  stopped: boolean;
  /**
   * The ids the run did not reach (a stop, the budget), in order: a next run's
   * {@link GitCopyOptions.wanted}. Absent when it stopped before it knew what is left (`left` is 0
   * then, not a count).
   */
  rest?: string[];
  /** With `rest`: how far the run had read the copies' index, for the next run's {@link GitCopyOptions.wantedSince}. */
  mark?: GitCopiesMark;
}

/** A batch's bounds: its small objects are compressed together in blocks (~2 MiB, as a picture's), so a batch spans many slices. */
const BATCH_FILES = 2_048;
const BATCH_BYTES = 4 * 1024 * 1024;

/**
 * Copies into the store, within a budget, the blobs its documents rest on and it holds no copy
 * of (most wanted first, {@link restingOnGit}), reading them from git (`git cat-file`, read-only,
 * each checked against its id) and storing them as a picture's copies are (one batch: blocks).
 * Works in slices, a turn of the event loop after each and `shouldStop` asked between two; the
 * puts need no lock (as a picture's: the object is young and in this process's own pack, which
 * prune leaves alone), and a batch's copies are named in the index under the store lock once the
 * batch is on disk, which holds it for one append. A busy store ends the run quietly.
 */
export async function copyGitBlobsIn(ctx: GitCopyContext, options: GitCopyOptions = {}): Promise<GitCopyReport> {
  const maxFiles = options.maxFiles ?? Number.POSITIVE_INFINITY;
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;
  const sliceFiles = Math.max(1, options.sliceFiles ?? 64);
  for (const [name, value] of [['maxFiles', maxFiles], ['maxBytes', maxBytes]] as const) {
    if (!(value >= 0)) throw new CheckpointError('INVALID_ARGUMENT', `${name} must be a non-negative number`);
  }
  let wanted: readonly string[];
  if (options.wanted === undefined) {
    const found = options.shouldStop === undefined ? await restingOnGit(ctx) : await restingOnGit(ctx, options.shouldStop, options.stopWhileReading === true);
    // Stopped before it knew what is left: nothing to take up, the next run looks afresh.
    if (found === undefined) return { copied: 0, bytes: 0, left: 0, lost: 0, stopped: true };
    wanted = found;
  } else {
    if (options.wantedSince !== undefined) ctx.copies.readFrom(options.wantedSince);
    ctx.copies.refresh();
    wanted = options.wanted.filter((id) => ctx.copies.get(id) === undefined);
  }
  const report: GitCopyReport = { copied: 0, bytes: 0, left: wanted.length, lost: 0, stopped: false, rest: [] };
  let at = 0;
  let busy = false;
  // Reached but not named (too large for what is left of the budget, a block that failed, a busy store): a next run's too.
  const again: string[] = [];
  while (at < wanted.length && report.copied < maxFiles && report.bytes < maxBytes && !report.stopped && !busy) {
    const batch = ctx.objects.openBatch();
    const copies: { id: string; key: string; size: number }[] = [];
    let batchBytes = 0;
    let read = 0;
    while (at < wanted.length && copies.length < BATCH_FILES && batchBytes < BATCH_BYTES && report.copied + copies.length < maxFiles) {
      if (read > 0 && read % sliceFiles === 0) {
        // Whatever waits (a command's frames, its picture) runs before the next slice.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (read % sliceFiles === 0 && options.shouldStop?.() === true) {
        report.stopped = true;
        break;
      }
      const id = wanted[at++] as string;
      read += 1;
      let blob: Buffer;
      try {
        blob = await readGitBlob(ctx.projectRoot, id);
      } catch {
        report.lost += 1;
        continue;
      }
      if (report.bytes + batchBytes + blob.length > maxBytes) {
        again.push(id);
        continue;
      }
      const ref = await ctx.objects.putBytes(blob, { batch });
      copies.push({ id, key: ref.object, size: blob.length });
      batchBytes += blob.length;
    }
    const failed = await ctx.objects.endBatch(batch);
    const written = copies.filter((copy) => !failed.has(copy.key));
    for (const copy of copies) if (failed.has(copy.key)) again.push(copy.id);
    try {
      await ctx.withLock(async () => ctx.copies.append(written.map((copy) => [copy.id, copy.key] as const)));
    } catch (error) {
      if (!(error instanceof CheckpointError && error.code === 'STORE_BUSY')) throw error;
      // Not named: those objects are garbage for a later prune, and the blobs are copied again next time.
      busy = true;
      for (const copy of written) again.push(copy.id);
      continue;
    }
    for (const copy of written) {
      report.copied += 1;
      report.bytes += copy.size;
    }
  }
  report.left = wanted.length - report.copied;
  report.rest = [...again, ...wanted.slice(at)];
  report.mark = ctx.copies.mark();
  return report;
}

/** The git key's store copy, when it has one, for prune's reference counts. */
export function copyKeyOf(copies: GitCopies, key: string): string | undefined {
  const id = gitBlobIdOf(key);
  return id === undefined ? undefined : copies.get(id);
}
