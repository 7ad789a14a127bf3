import { resolveCoverage, type CoverageOptions, type ResolvedCoverage } from '../capture/coverage.js';
import type { TakePictureOptions } from '../capture/picture.js';
import { DEFAULTS, MIB } from '../core/defaults.js';
import { CheckpointError } from '../core/errors.js';
import { nodeFileSystem, type FileSystem } from '../fs/file-system.js';
import type { CheckpointStore } from '../store/store.js';
import { storeBehind, type StoreView } from '../store/view.js';
import type { ResolvedCheckpointConfig } from './config.js';

/** Construction options of {@link CheckpointObserver}. */
export interface CheckpointObserverOptions {
  /** The store the observer writes to (from `openStore` in `turnback/admin`). */
  store: StoreView;
  /** Names this observer's checkpoints in the store. @default a random id */
  sessionId?: string;
  /** How long a restore waits for the store lock, ms. @default 5000 */
  restoreLockTimeoutMs?: number;
  /**
   * The process whose life this session's open calls follow: a call whose process is gone is an
   * interrupted run to the next process that looks. A server working for a short-lived client (the
   * `turnback` command's server) names the client here. @default process.pid
   */
  ownerPid?: number;
  /** Injected file system (tests). @default node:fs */
  fs?: FileSystem;
  /**
   * Coverage rules and limits: of whole-tree pictures, and `maxFileMib`, the largest file any
   * capture copies (larger ones are recorded, not copied). @default the `[checkpoints]` defaults
   */
  coverage?: CoverageOptions;
  /** Per-session byte cap of tool-call snapshots; the oldest are evicted first. @default 1 GiB */
  snapshotCapBytes?: number;
  /**
   * Lists one folder during pictures. For tests only: it lets a test make a folder unreadable
   * (tests run as root, where `chmod 000` hides nothing). @default `fs.readdirSync`
   */
  pictureReadDir?: TakePictureOptions['readDir'];
  /**
   * Epoch milliseconds by which every whole-tree picture of this observer ends, whatever is left
   * of its own `maxPictureSeconds`: one budget for all the pictures of a short process (an agent's
   * hook event, which may end open calls and begin another). @default each picture's own budget
   */
  pictureDeadline?: number;
}

/** {@link CheckpointObserverOptions} with every default applied; what the observer's parts see. */
export interface ResolvedObserverOptions {
  store: CheckpointStore;
  sessionId: string;
  ownerPid: number;
  restoreLockTimeoutMs: number;
  fs: FileSystem;
  coverage: ResolvedCoverage;
  snapshotCapBytes: number;
  pictureReadDir: TakePictureOptions['readDir'] | undefined;
  pictureDeadline: number | undefined;
}

/**
 * Validates and resolves observer options once.
 * @throws CheckpointError `INVALID_ARGUMENT` for a store turnback did not open or a bad number; `INVALID_CONFIG` for bad coverage.
 */
export function resolveObserverOptions(options: CheckpointObserverOptions): ResolvedObserverOptions {
  if (typeof options !== 'object' || options === null) throw new CheckpointError('INVALID_ARGUMENT', 'observer options must be an object');
  const restoreLockTimeoutMs = options.restoreLockTimeoutMs ?? DEFAULTS.restoreLockTimeoutMs;
  const snapshotCapBytes = options.snapshotCapBytes ?? DEFAULTS.snapshotCapMib * MIB;
  for (const [name, value] of [['restoreLockTimeoutMs', restoreLockTimeoutMs], ['snapshotCapBytes', snapshotCapBytes]] as const) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new CheckpointError('INVALID_ARGUMENT', `${name} must be a non-negative number`);
  }
  if (options.ownerPid !== undefined && (!Number.isSafeInteger(options.ownerPid) || options.ownerPid <= 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'ownerPid must be a positive whole number');
  }
  if (options.pictureDeadline !== undefined && (typeof options.pictureDeadline !== 'number' || !Number.isFinite(options.pictureDeadline))) {
    throw new CheckpointError('INVALID_ARGUMENT', 'pictureDeadline must be a time in epoch milliseconds');
  }
  if (options.sessionId !== undefined && (typeof options.sessionId !== 'string' || options.sessionId.length === 0)) {
    throw new CheckpointError('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
  }
  return {
    store: storeBehind(options.store),
    sessionId: options.sessionId ?? `session-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`,
    ownerPid: options.ownerPid ?? process.pid,
    restoreLockTimeoutMs,
    fs: options.fs ?? nodeFileSystem,
    coverage: resolveCoverage(options.coverage ?? {}),
    snapshotCapBytes,
    pictureReadDir: options.pictureReadDir,
    pictureDeadline: options.pictureDeadline,
  };
}

/** The observer options a resolved `[checkpoints]` config gives: its limits, skip list and snapshot cap. */
export function observerOptionsFromConfig(config: ResolvedCheckpointConfig): Pick<CheckpointObserverOptions, 'coverage' | 'snapshotCapBytes'> {
  return {
    coverage: {
      maxFileMib: config.maxFileMib,
      maxPictureFiles: config.maxPictureFiles,
      maxPictureMib: config.maxPictureMib,
      maxPictureSeconds: config.maxPictureSeconds,
      maxWalkEntries: config.maxWalkEntries,
      skip: [...config.skip],
      copyCredentials: config.copyCredentials,
    },
    snapshotCapBytes: Math.floor(config.snapshotCapMib * MIB),
  };
}
