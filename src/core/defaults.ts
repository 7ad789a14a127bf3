/**
 * Every default in one table: the `[checkpoints]` config, the coverage limits of pictures, the
 * observer's options and the report's reason texts all read it, so a default is written once.
 * Keys are the resolved (camelCase) names; the TOML spelling is in session/config.ts.
 */
export const DEFAULTS: Readonly<{
  /** Largest file copied, MiB; larger files are recorded, not copied. */
  maxFileMib: number;
  /** Files one picture copies. */
  maxPictureFiles: number;
  /** Bytes one picture copies, MiB. */
  maxPictureMib: number;
  /** Time one picture may take, seconds. */
  maxPictureSeconds: number;
  /** Folder entries one walk lists. */
  maxWalkEntries: number;
  /** Deepest folder level a picture reads (the project root is level 0). */
  maxDepth: number;
  /** Checkpoints `prune` keeps per project. */
  retain: number;
  /** Whole store cap, GiB. */
  maxStoreGib: number;
  /** Age in days after which `prune` clears a checkpoint. */
  keepDays: number;
  /** Per-session byte cap of tool-call snapshots, MiB. */
  snapshotCapMib: number;
  /** How long a restore waits for the store lock, ms. */
  restoreLockTimeoutMs: number;
}> = Object.freeze({
  maxFileMib: 100,
  maxPictureFiles: 10_000,
  maxPictureMib: 500,
  maxPictureSeconds: 10,
  maxWalkEntries: 100_000,
  maxDepth: 64,
  retain: 100,
  maxStoreGib: 5,
  keepDays: 14,
  snapshotCapMib: 1024,
  restoreLockTimeoutMs: 5000,
});

/** Bytes in one MiB. */
export const MIB: number = 1024 * 1024;
