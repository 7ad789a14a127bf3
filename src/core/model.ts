import type { CheckpointId } from './id.js';

/**
 * The recorded state of one path at one moment. Every surface (observer turns, shell-call
 * attribution, pictures, snapshots, pre-restore saves) records paths with this one union.
 */
export type PathState =
  /** A regular file whose bytes are in the store under `object`. */
  | {
      type: 'file';
      object: string;
      hash: string;
      size: number;
      mode: number;
      /** The inode it had: a restore rewrites a hard-linked file in place only while it is still that inode. */
      ino?: number;
      /**
       * SHA-256 of the bytes (64 hex digits), recorded by savepoints, which check it before
       * restoring a byte; the store's own keys (`hash`) are xxh64.
       */
      sha256?: string;
    }
  /** The path did not exist. */
  | { type: 'absent' }
  /** A symbolic link, recorded and never followed. */
  | { type: 'symlink'; target: string }
  /** A regular file that was seen but not copied; `reason` says why. `hash` is set when it was read. */
  | { type: 'uncopied'; reason: UncopiedReason; size: number; mode: number; hash?: string }
  /** A folder, FIFO, socket or device sitting where a file was expected. Never restored. */
  | { type: 'other'; kind: 'directory' | 'fifo' | 'socket' | 'device' | 'unknown' };

/** Why a file has no stored copy. */
export type UncopiedReason =
  | 'too-large'
  | 'credential'
  | 'picture-budget'
  | 'changed-during-capture'
  | 'unreadable'
  | 'store-busy'
  | 'store-full';

/** Every {@link UncopiedReason}, for validating records read back from disk. */
export const UNCOPIED_REASONS: ReadonlySet<string> = new Set<UncopiedReason>(['too-large', 'credential', 'picture-budget', 'changed-during-capture', 'unreadable', 'store-busy', 'store-full']);

/**
 * A content fingerprint used by the restore guard: what a path held, independent of where its
 * bytes are stored. `file:<hash>`, `symlink:<target>`, `absent`, or `other:<kind>`.
 * Modes are compared separately.
 */
export type Fingerprint = string;

/**
 * True for a post-write record that holds a file's stat identity (`stat:<ino>:<size>:<mtime ns>:
 * <ctime ns>`) instead of its content hash: recorded cheaply at `afterWrite`, replaced by the
 * content fingerprint as soon as the session hashes it, and left in place only when the session
 * stopped first (or the file changed again outside the session).
 */
export function isStatFingerprint(fingerprint: Fingerprint): boolean {
  return fingerprint.startsWith('stat:');
}

/**
 * What a fingerprint is computed from: a recorded {@link PathState}, or anything shaped like one
 * (the disk state the restore guard reads), so there is one definition of the fingerprint.
 */
export type FingerprintSource =
  | { type: 'file'; hash: string }
  | { type: 'absent' }
  | { type: 'symlink'; target: string }
  | { type: 'uncopied'; hash?: string }
  | { type: 'other'; kind: string };

/** The fingerprint of a recorded state, or `undefined` when its content is unknown (uncopied, unhashed). */
export function fingerprintOf(state: PathState | FingerprintSource): Fingerprint | undefined {
  switch (state.type) {
    case 'file':
      return `file:${state.hash}`;
    case 'absent':
      return 'absent';
    case 'symlink':
      return `symlink:${state.target}`;
    case 'uncopied':
      return state.hash === undefined ? undefined : `file:${state.hash}`;
    case 'other':
      return `other:${state.kind}`;
  }
}

/**
 * What kind of moment a checkpoint records: `turn` (a user turn, with its writes and calls),
 * `call` (a shell call ended by another process after a restart), `snapshot` (one tool call's
 * pre-images), `pre-restore` (what a restore overwrote: its undo) or `savepoint` (the files of
 * the workspace when the model asked to save them: the savepoint tool's).
 */
export type CheckpointKind = 'turn' | 'call' | 'snapshot' | 'pre-restore' | 'savepoint';

/**
 * One path's entry in a checkpoint: its state before the first change in the checkpoint's span,
 * and the fingerprint it had after the last recorded change (what the restore guard compares).
 */
export interface ManifestEntry {
  /** Project-relative path, `/`-separated, validated. */
  path: string;
  /** State before the first change in this checkpoint. */
  before: PathState;
  /** Fingerprint after the latest recorded change; `undefined` until an afterWrite / callEnd records it. */
  after?: Fingerprint;
  /** Mode after the latest recorded change, for files. */
  afterMode?: number;
  /** The call that made the latest change, when known. */
  callId?: string;
  /** True when attribution for this path is unreliable (folder unreadable, file vanished mid-scan). */
  incomplete?: boolean;
}

/**
 * Why something was not captured: a file without a copy ({@link UncopiedReason}), a folder a
 * picture did not check (`unreadable`, `unreadable-name`, `gitignore-unusable`, `too-deep`,
 * `walk-entries`, `time-limit`), a journal problem (`journal-corrupt`, `journal-write-failed`), a
 * write recorded without its pre-image (`no-pre-image`), an interrupted call whose picture is gone
 * (`no-baseline`), or a restore whose discard could not be recorded (`discard-not-recorded`).
 */
export type GapReason =
  | UncopiedReason
  | 'unreadable-name'
  | 'gitignore-unusable'
  | 'too-deep'
  | 'walk-entries'
  | 'time-limit'
  | 'journal-corrupt'
  | 'journal-write-failed'
  | 'no-pre-image'
  | 'no-baseline'
  | 'discard-not-recorded';

/** A gap: something that was not captured, with the reason. Gaps are reported, never silent. */
export interface Gap {
  /** The path or folder concerned, when there is one. */
  path?: string;
  /** Machine-readable reason. */
  reason: GapReason;
  /** Human-readable detail. */
  detail: string;
}

/** Side-effect class of a tool or shell call. */
export type SideEffect = 'none' | 'filesystem' | 'network' | 'desktop_control';

/** A call recorded inside a checkpoint. */
export interface CallRecord {
  callId: string;
  sideEffect: SideEffect;
  startedAt: string;
  endedAt?: string;
  /** Paths whose attribution is unreliable for this call. */
  incompletePaths?: string[];
  /** The exit code of the command the call ran, when one did (`turnback run`; 128 + signal number for a signal). */
  exitCode?: number;
  /** Lines about what the call did beyond files (git's HEAD moved, files staged), shown with its changes. */
  notes?: string[];
  /** What the picture before the call covered and left out on purpose. */
  coverage?: CoverageCounts;
  /**
   * Entries the call's pictures passed over (ignored, `skip`; a folder ends with `/`) that the
   * call deleted: no copy was kept, and no entry of the checkpoint says they are gone. The first
   * {@link CALL_IGNORED_DELETED_MAX}, sorted; `ignoredDeletedMore` counts the rest.
   */
  ignoredDeleted?: string[];
  /** Of those, how many more the call deleted than `ignoredDeleted` names. */
  ignoredDeletedMore?: number;
}

/** What one picture covered and what it left out on purpose, by kind. */
export interface CoverageCounts {
  /** Files and links pictured. */
  files: number;
  /** Entries the ignore rules, `skip` and the default skipped folders left out (a folder counts once; files git tracks are pictured all the same). */
  ignored: number;
  /** Credential files recorded without a copy (`copy_credentials = true` copies them). */
  credential: number;
  /** Files over `max_file_mib`, recorded without a copy. */
  tooLarge: number;
  /** Clean tracked files past the copy budget, recorded by their git blob id until a later picture copies them in. */
  onGit?: number;
  /** Set when the walk stopped at its entry or time limit: what it left, as counts. */
  left?: LeftByLimit;
}

/** What a walk stopped by its entry or time limit left uncovered. */
export interface LeftByLimit {
  /** The limit that stopped it. */
  reason: 'walk-entries' | 'time-limit';
  /** Folders not walked (their untracked files are not pictured). */
  folders: number;
  /** In a repository: the files git tracks under them, pictured from the index's paths. */
  trackedPictured?: number;
  /** In a repository: the files git tracks under them that the deadline left without a stat. */
  trackedMissed?: number;
}

/** The most notes one call record keeps. */
export const CALL_NOTES_MAX = 20;
/** The longest note one call record keeps, in characters. */
export const CALL_NOTE_MAX_CHARS = 500;
/** The most deleted ignored entries one call record names (the rest are counted). */
export const CALL_IGNORED_DELETED_MAX = 1000;

/** Lightweight listing entry: the manifest without its entry list. */
export interface CheckpointMeta {
  id: CheckpointId;
  kind: CheckpointKind;
  sessionId?: string;
  label?: string;
  createdAt: string;
  /** Canonical project root this checkpoint belongs to. */
  workspace: string;
  /** False while the checkpoint is open, or when it was cut short; `gaps` says what is missing. */
  complete: boolean;
  /** Number of entries. */
  entryCount: number;
  /** For `pre-restore`: the checkpoint the restore went back to. */
  restoreOf?: CheckpointId;
  /** For tool-call snapshots: the owning scope (toolCallId). */
  scopeId?: string;
}

/** A checkpoint's full manifest: one versioned JSON file per checkpoint. */
export interface CheckpointManifest extends CheckpointMeta {
  format: 'turnback-manifest';
  version: 1;
  entries: ManifestEntry[];
  gaps: Gap[];
  calls: CallRecord[];
}
