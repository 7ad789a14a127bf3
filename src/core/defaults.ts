// Every default in one table: the `[checkpoints]` config, the coverage limits of pictures, the
// observer's options and the report's reason texts all read it, so a default is written once.
// Keys are the resolved (camelCase) names; the TOML spelling is in session/config.ts.

/** The shape of {@link DEFAULTS}: every default turnback has, by its resolved name. */
export interface Defaults {
  /** Largest file copied, in MiB (at most 1024); larger files are recorded `uncopied: 'too-large'`, never copied. @default 100 */
  maxFileMib: number;
  /** Files one picture copies; later files are recorded `uncopied: 'picture-budget'`. @default 10000 */
  maxPictureFiles: number;
  /** Bytes one picture copies, in MiB. @default 500 */
  maxPictureMib: number;
  /** Time one picture may take, in seconds; folders not reached by then are left unchecked. @default 10 */
  maxPictureSeconds: number;
  /** Folder entries one walk lists; folders past this are left unchecked. @default 100000 */
  maxWalkEntries: number;
  /** Deepest folder level read (the project root is level 0); deeper folders are left unchecked. @default 64 */
  maxDepth: number;
  /** Checkpoints `prune` keeps per project. @default 100 */
  retain: number;
  /** Whole store cap, GiB. @default 5 */
  maxStoreGib: number;
  /** Age in days after which `prune` clears a checkpoint. @default 14 */
  keepDays: number;
  /** Per-session byte cap of tool-call snapshots, MiB. @default 1024 */
  snapshotCapMib: number;
  /** How long a restore waits for the store lock, ms. @default 5000 */
  restoreLockTimeoutMs: number;
  /** Copy credential files (`.env`, `*.pem`, …) into the owner-only store like any file. @default false */
  copyCredentials: boolean;
}

/** Every default, written once. */
export const DEFAULTS: Readonly<Defaults> = Object.freeze({
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
  copyCredentials: false,
});

/**
 * The largest `max_file_mib` accepted. A file is read into one buffer, and a single read past
 * 2 GiB aborts Node on a native assertion; a copy of up to 1 GiB stays well inside what one
 * buffer and one deflate pass hold. Larger files are recorded, never copied.
 */
export const MAX_FILE_MIB_CEILING = 1024;

/** Bytes in one MiB. */
export const MIB: number = 1024 * 1024;
