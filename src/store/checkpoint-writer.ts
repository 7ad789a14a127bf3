import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest } from '../core/model.js';
import type { FileSystem } from '../fs/file-system.js';
import { foldJournal, journalRecordProblem, type JournalMeta, type JournalRecord, type JournalWriter } from './journal.js';
import type { StoreLayout } from './layout.js';
import { manifestProblem, writeManifest } from './manifests.js';

/** What `seal` may still change. */
export interface SealPatch {
  /** @default the last `meta` record's value, else true */
  complete?: boolean;
  label?: string;
}

/** An open checkpoint: append journal records, then seal (or close to leave it open). */
export interface CheckpointWriter {
  /** The checkpoint's id. */
  readonly id: CheckpointId;
  /** Appends one record (serialised in call order). */
  append(record: JournalRecord): Promise<void>;
  /** Appends records in order with one write; all are checked before any is written. */
  appendMany(records: readonly JournalRecord[]): Promise<void>;
  /**
   * Appends a record that supersedes an earlier one of the same path (a repeat touch's `after`),
   * written within milliseconds or before the next append, seal, close or process exit.
   */
  appendSoon(record: JournalRecord): Promise<void>;
  /** Writes the manifest atomically, then removes the journal. */
  seal(patch?: SealPatch): Promise<CheckpointManifest>;
  /**
   * True once an append failed (a full disk, say): the journal takes no more records (a torn
   * line may end it), and the caller continues in a new checkpoint.
   */
  readonly failed: boolean;
  /** Closes the journal handle without sealing; the checkpoint stays open (`complete: false`). */
  close(): Promise<void>;
}

/** Builds a manifest from journal metadata and records. */
export function buildManifest(meta: JournalMeta, records: readonly JournalRecord[], patch: SealPatch = {}): CheckpointManifest {
  const folded = foldJournal(records);
  const manifest: CheckpointManifest = {
    format: 'turnback-manifest',
    version: 1,
    id: meta.id,
    kind: meta.kind,
    createdAt: meta.createdAt,
    workspace: meta.workspace,
    complete: patch.complete ?? folded.complete ?? true,
    entryCount: folded.entries.length,
    entries: folded.entries,
    gaps: folded.gaps,
    calls: folded.calls,
  };
  if (meta.sessionId !== undefined) manifest.sessionId = meta.sessionId;
  const label = patch.label ?? folded.label ?? meta.label;
  if (label !== undefined) manifest.label = label;
  if (meta.restoreOf !== undefined) manifest.restoreOf = meta.restoreOf;
  if (meta.scopeId !== undefined) manifest.scopeId = meta.scopeId;
  return manifest;
}

/** The {@link CheckpointWriter} of a checkpoint opened by `CheckpointStore.openCheckpoint`. */
export class OpenCheckpoint implements CheckpointWriter {
  readonly id: CheckpointId;
  private readonly records: JournalRecord[] = [];
  private sealed = false;

  constructor(
    private readonly fs: FileSystem,
    private readonly layout: StoreLayout,
    private readonly meta: JournalMeta,
    private readonly journal: JournalWriter,
  ) {
    this.id = meta.id;
  }

  append(record: JournalRecord): Promise<void> {
    return this.appendMany([record]);
  }

  appendSoon(record: JournalRecord): Promise<void> {
    if (this.sealed) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `checkpoint ${this.id} is sealed`));
    const problem = journalRecordProblem(record);
    if (problem !== undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `invalid journal record: ${problem}`));
    const done = this.journal.appendSoon(record);
    // In call order with every other record, as the journal will hold them.
    this.records.push(record);
    return done;
  }

  appendMany(records: readonly JournalRecord[]): Promise<void> {
    if (this.sealed) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `checkpoint ${this.id} is sealed`));
    for (const record of records) {
      const problem = journalRecordProblem(record);
      if (problem !== undefined) return Promise.reject(new CheckpointError('INVALID_ARGUMENT', `invalid journal record: ${problem}`));
    }
    const done = this.journal.appendMany(records);
    // Kept in memory too, so seal needs no re-read. Callers must not mutate a record after appending it.
    for (const record of records) this.records.push(record);
    return done;
  }

  async seal(patch: SealPatch = {}): Promise<CheckpointManifest> {
    if (this.sealed) throw new CheckpointError('INVALID_ARGUMENT', `checkpoint ${this.id} is already sealed`);
    if (patch.label !== undefined && typeof patch.label !== 'string') throw new CheckpointError('INVALID_ARGUMENT', 'label must be a string');
    if (patch.complete !== undefined && typeof patch.complete !== 'boolean') throw new CheckpointError('INVALID_ARGUMENT', 'complete must be a boolean');
    this.sealed = true;
    await this.journal.close().catch(() => undefined);
    const manifest = buildManifest(this.meta, this.records, patch);
    if (this.journal.failed !== undefined) {
      manifest.complete = false;
      manifest.gaps.push({ reason: 'journal-write-failed', detail: asCheckpointError(this.journal.failed, 'journal append failed').message });
    }
    const problem = manifestProblem(manifest);
    if (problem !== undefined) throw new CheckpointError('INVALID_ARGUMENT', `checkpoint ${this.id} cannot be sealed: ${problem}`);
    await writeManifest(this.layout, manifest);
    await this.fs.unlink(this.journal.file).catch((error: unknown) => {
      if (errnoCode(error) !== 'ENOENT') throw asCheckpointError(error, 'cannot remove sealed journal', this.journal.file);
    });
    return manifest;
  }

  get failed(): boolean {
    return this.journal.failed !== undefined;
  }

  close(): Promise<void> {
    return this.journal.close();
  }
}

