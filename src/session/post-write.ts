import type { Fingerprint } from '../core/model.js';
import { diskFingerprint, readDiskState, readPostWriteState, readVersionSync, type DiskState } from '../fs/disk-state.js';
import type { FileSystem } from '../fs/file-system.js';
import type { CheckpointWriter } from '../store/store.js';

/** Past this many unhashed post-write records, a write hashes them before returning. */
export const MAX_UNHASHED = 2048;

type HashedFile = Extract<DiskState, { type: 'file' }> & { statId: Fingerprint };

/**
 * Deferred post-write hashing. `afterWrite` records a file's stat identity (one `lstat`); this
 * replaces each identity with the content fingerprint before anything reads the records back,
 * hashing a file only if it still has the identity its write left, so each version is hashed once
 * however often a turn rewrites the file.
 */
export class PostWriteHasher {
  /** Files whose post-write record is still a stat identity, with the checkpoints to update. */
  readonly #unhashed = new Map<string, { statId: Fingerprint; callId?: string; writers: CheckpointWriter[] }>();
  #hashing: Promise<void> = Promise.resolve();
  /**
   * Files {@link hashPending} just read, by path: a plan right after (a restore seals, then plans)
   * takes one whose stat identity still matches instead of reading and hashing it again. Each
   * entry is used once; the restore guard reads the disk again before any write.
   */
  readonly #recentlyHashed = new Map<string, HashedFile>();

  constructor(
    private readonly fs: FileSystem,
    private readonly projectRoot: string,
  ) {}

  /** Notes a post-write stat identity to hash later (`writers`: the turn, and a snapshot). */
  note(path: string, statId: Fingerprint, writers: CheckpointWriter[], callId: string | undefined): void {
    this.#unhashed.set(path, { statId, writers, ...(callId !== undefined ? { callId } : {}) });
  }

  /** Forgets a path whose post-write record already is a content fingerprint. */
  forget(path: string): void {
    this.#unhashed.delete(path);
  }

  /** How many identities wait to be hashed. */
  get pending(): number {
    return this.#unhashed.size;
  }

  /**
   * Replaces the stat identities with content fingerprints: each file still holding the version
   * its write left is hashed, and its `after` record appended again (the last one counts). A file
   * changed since keeps its identity, so the restore guard refuses it, as it would refuse any
   * change made outside the session. Serialised, so each version is hashed once.
   */
  hashPending(): Promise<void> {
    const next = this.#hashing.then(() => this.#run());
    this.#hashing = next.catch(() => undefined);
    return next;
  }

  /**
   * The disk state of a path if {@link hashPending} read it moments ago and it is still the very
   * same version (one `lstat`); `undefined` otherwise. Each entry is used once.
   */
  async takeRecent(projectPath: string): Promise<DiskState | undefined> {
    const recent = this.#recentlyHashed.get(projectPath);
    if (recent === undefined) return undefined;
    this.#recentlyHashed.delete(projectPath);
    const now = await readPostWriteState(this.fs, this.projectRoot, projectPath);
    return now.fingerprint === recent.statId ? recent : undefined;
  }

  async #run(): Promise<void> {
    for (const [path, entry] of [...this.#unhashed]) {
      let disk: DiskState | undefined;
      try {
        const version = readVersionSync(this.fs, this.projectRoot, path, entry.statId);
        disk = version === 'changed' ? undefined : version === 'unknown' ? await readDiskState(this.fs, this.projectRoot, path) : version;
      } catch {
        disk = undefined; // unreadable now: the identity stays, and the guard refuses the path
      }
      // Checked right before the synchronous appends: a newer afterWrite replaced the entry.
      if (this.#unhashed.get(path) !== entry) continue;
      this.#unhashed.delete(path);
      if (disk?.type !== 'file' || disk.statId !== entry.statId) continue;
      if (this.#recentlyHashed.size < MAX_UNHASHED * 4) this.#recentlyHashed.set(path, { ...disk, statId: entry.statId });
      const record = { op: 'after' as const, path, after: diskFingerprint(disk), afterMode: disk.mode };
      await Promise.all(
        entry.writers.map((writer, index) =>
          // A writer sealed meanwhile keeps the identity; nothing is lost but the shortcut.
          writer.append(index === 0 && entry.callId !== undefined ? { ...record, callId: entry.callId } : record).catch(() => undefined),
        ),
      );
    }
  }
}
