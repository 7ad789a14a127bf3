import { createHash } from 'node:crypto';
import { homeFolder } from '../core/home.js';
import * as path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { CheckpointError } from '../core/errors.js';
import { DEFAULTS, MAX_FILE_MIB_CEILING } from '../core/defaults.js';
import { parseS3Location } from '../remote/s3-location.js';

/**
 * The `[capabilities.checkpoint]` table (and the CLI's `[checkpoints]` table): keys as they are
 * spelled in TOML. Every key is optional.
 */
export interface CheckpointConfig {
  /** The one gate. @default false */
  enabled?: boolean;
  /**
   * Store folder. `s3://bucket/prefix` keeps the store on S3 (or a server that speaks its API):
   * checkpoints are still taken in the local store (the default folder), and pushed there.
   * @default `$XDG_DATA_HOME/turnback/<project key>` else `~/.local/share/turnback/<project key>`
   */
  dir?: string;
  /** With an `s3://` dir: the S3 server's address (`https://…`). @default AWS's own for the region */
  endpoint?: string;
  /** With an `s3://` dir: the region. @default the SDK's (`AWS_REGION`), else `us-east-1` */
  region?: string;
  /** With an `s3://` dir: the bucket in the path (`endpoint/bucket/key`), as most S3-compatible servers want. @default false */
  force_path_style?: boolean;
  /**
   * With an `s3://` dir: how long one request to the server may go unanswered, seconds; each is
   * tried three times, so a push or pull stops after about three times this. @default 30
   */
  request_timeout_seconds?: number;
  /** Checkpoints kept per project by `prune`. @default DEFAULT_RETAIN (100) */
  retain?: number;
  /** Extra gitignore-style patterns that pictures never cover. @default [] */
  skip?: string[];
  /** Largest file copied, MiB. @default 100 */
  max_file_mib?: number;
  /** Whole store cap, GiB; the oldest checkpoints are cleared first. @default 5 */
  max_store_gib?: number;
  /** Age in days after which `prune` clears a checkpoint. @default 14 */
  keep_days?: number;
  /** Files one picture copies. @default 10000 */
  max_picture_files?: number;
  /** Bytes one picture copies, MiB. @default 500 */
  max_picture_mib?: number;
  /** Time one picture may take, seconds. @default 10 */
  max_picture_seconds?: number;
  /** Entries one walk lists. @default 100000 */
  max_walk_entries?: number;
  /** Per-session byte cap of tool-call snapshots, MiB. @default 1024 */
  snapshot_cap_mib?: number;
  /** Paths whose change is flagged `protected` in turn-end lists. @default [] */
  protected?: string[];
  /** Copy credential files (`.env`, `*.pem`, …) into the owner-only store too, so undo can bring them back. @default false */
  copy_credentials?: boolean;
}

/** Where the remote store is, from an `s3://` dir (credentials come from the AWS SDK's own chain). */
export interface RemoteStoreConfig {
  /** `s3://bucket/` or `s3://bucket/prefix/`. */
  location: string;
  endpoint: string | undefined;
  region: string | undefined;
  forcePathStyle: boolean;
  /** One request's deadline, ms (`request_timeout_seconds`). */
  requestTimeoutMs: number;
}

/** {@link CheckpointConfig} with every default applied. */
export interface ResolvedCheckpointConfig {
  enabled: boolean;
  /** The local store folder; `undefined`: the default one (also when the store is remote). */
  dir: string | undefined;
  /** The remote store, when `dir` is an `s3://` location. */
  remote: RemoteStoreConfig | undefined;
  retain: number;
  skip: string[];
  maxFileMib: number;
  maxStoreGib: number;
  keepDays: number;
  maxPictureFiles: number;
  maxPictureMib: number;
  maxPictureSeconds: number;
  maxWalkEntries: number;
  snapshotCapMib: number;
  protected: string[];
  copyCredentials: boolean;
}


/** TOML key → resolved field, and whether it must be an integer. Defaults come from {@link DEFAULTS}. */
const NUMERIC_KEYS = {
  retain: ['retain', true],
  max_file_mib: ['maxFileMib', false],
  max_store_gib: ['maxStoreGib', false],
  keep_days: ['keepDays', false],
  max_picture_files: ['maxPictureFiles', true],
  max_picture_mib: ['maxPictureMib', false],
  max_picture_seconds: ['maxPictureSeconds', false],
  max_walk_entries: ['maxWalkEntries', true],
  snapshot_cap_mib: ['snapshotCapMib', false],
} as const;

type NumericKey = keyof typeof NUMERIC_KEYS;
const KNOWN_KEYS = new Set<string>(['enabled', 'dir', 'endpoint', 'region', 'force_path_style', 'request_timeout_seconds', 'skip', 'protected', 'copy_credentials', ...Object.keys(NUMERIC_KEYS)]);

/**
 * Validates a checkpoint table and applies defaults. Unknown keys and wrong types are errors, so a
 * typo never silently turns a limit off.
 *
 * @throws CheckpointError `INVALID_CONFIG`
 */
export function resolveCheckpointConfig(raw: unknown): ResolvedCheckpointConfig {
  const table = raw ?? {};
  if (typeof table !== 'object' || Array.isArray(table)) {
    throw new CheckpointError('INVALID_CONFIG', 'checkpoint config must be a table');
  }
  const input = table as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!KNOWN_KEYS.has(key)) throw new CheckpointError('INVALID_CONFIG', `unknown checkpoint config key: ${key}`);
  }
  if (input.enabled !== undefined && typeof input.enabled !== 'boolean') {
    throw new CheckpointError('INVALID_CONFIG', 'enabled must be true or false');
  }
  if (input.copy_credentials !== undefined && typeof input.copy_credentials !== 'boolean') {
    throw new CheckpointError('INVALID_CONFIG', 'copy_credentials must be true or false');
  }
  if (input.dir !== undefined && (typeof input.dir !== 'string' || input.dir.length === 0 || input.dir.includes('\0'))) {
    throw new CheckpointError('INVALID_CONFIG', 'dir must be a non-empty path');
  }
  const remote = remoteOf(input);
  const resolved: ResolvedCheckpointConfig = {
    enabled: input.enabled === true,
    dir: remote === undefined ? (input.dir as string | undefined) : undefined,
    remote,
    retain: DEFAULTS.retain,
    skip: stringList(input.skip, 'skip'),
    maxFileMib: DEFAULTS.maxFileMib,
    maxStoreGib: DEFAULTS.maxStoreGib,
    keepDays: DEFAULTS.keepDays,
    maxPictureFiles: DEFAULTS.maxPictureFiles,
    maxPictureMib: DEFAULTS.maxPictureMib,
    maxPictureSeconds: DEFAULTS.maxPictureSeconds,
    maxWalkEntries: DEFAULTS.maxWalkEntries,
    snapshotCapMib: DEFAULTS.snapshotCapMib,
    protected: stringList(input.protected, 'protected'),
    copyCredentials: input.copy_credentials === true ? true : DEFAULTS.copyCredentials,
  };
  for (const key of Object.keys(NUMERIC_KEYS) as NumericKey[]) {
    const [field, integer] = NUMERIC_KEYS[key];
    const value = input[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      throw new CheckpointError('INVALID_CONFIG', `${key} must be a positive ${integer ? 'integer' : 'number'}`);
    }
    resolved[field] = value;
  }
  if (resolved.maxFileMib > MAX_FILE_MIB_CEILING) {
    throw new CheckpointError('INVALID_CONFIG', `max_file_mib is at most ${MAX_FILE_MIB_CEILING} (a copy is read into one buffer); larger files are recorded, never copied`);
  }
  return resolved;
}

/** A remote request's deadline when the config names none: long enough for a 5 MiB part on a slow link. */
const DEFAULT_REQUEST_TIMEOUT_SECONDS = 30;

/** The remote store of a table whose `dir` is `s3://…`; its three keys are refused without one. */
function remoteOf(input: Record<string, unknown>): RemoteStoreConfig | undefined {
  const { endpoint, region, force_path_style: forcePathStyle, request_timeout_seconds: timeout } = input;
  if (endpoint !== undefined && (typeof endpoint !== 'string' || !/^https?:\/\/[^\s/]+/.test(endpoint))) throw new CheckpointError('INVALID_CONFIG', 'endpoint must be an http:// or https:// address');
  if (region !== undefined && (typeof region !== 'string' || !/^[a-z0-9-]{1,64}$/.test(region))) throw new CheckpointError('INVALID_CONFIG', 'region must be a region name such as us-east-1');
  if (forcePathStyle !== undefined && typeof forcePathStyle !== 'boolean') throw new CheckpointError('INVALID_CONFIG', 'force_path_style must be true or false');
  if (timeout !== undefined && (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0 || timeout > 3600)) throw new CheckpointError('INVALID_CONFIG', 'request_timeout_seconds must be a number of seconds above 0, at most 3600');
  if (typeof input.dir !== 'string' || !input.dir.startsWith('s3://')) {
    const stray = ['endpoint', 'region', 'force_path_style', 'request_timeout_seconds'].find((key) => input[key] !== undefined);
    if (stray !== undefined) throw new CheckpointError('INVALID_CONFIG', `${stray} applies only to a store on S3 (dir = "s3://bucket/prefix")`);
    return undefined;
  }
  const where = parseS3Location(input.dir);
  return { location: `s3://${where.bucket}/${where.prefix}`, endpoint: endpoint as string | undefined, region: region as string | undefined, forcePathStyle: forcePathStyle === true, requestTimeoutMs: Math.round(((timeout as number | undefined) ?? DEFAULT_REQUEST_TIMEOUT_SECONDS) * 1000) };
}

function stringList(value: unknown, key: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string' || item.length === 0)) {
    throw new CheckpointError('INVALID_CONFIG', `${key} must be a list of non-empty strings`);
  }
  return [...(value as string[])];
}

/**
 * Extracts the checkpoint table from a whole config: a parsed object with
 * `capabilities.checkpoint` (or a top-level `checkpoints` table, the CLI's spelling), or TOML text.
 *
 * @throws CheckpointError `INVALID_CONFIG` for TOML syntax errors or a non-table value.
 */
export function checkpointTableOf(config: unknown): unknown {
  let parsed: unknown = config;
  if (typeof config === 'string') {
    try {
      parsed = parseToml(config);
    } catch (error) {
      throw new CheckpointError('INVALID_CONFIG', `config is not valid TOML: ${(error as Error).message}`, { cause: error });
    }
  }
  if (parsed === undefined || parsed === null) return undefined;
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new CheckpointError('INVALID_CONFIG', 'config must be a table');
  }
  const root = parsed as Record<string, unknown>;
  const capabilities = root.capabilities;
  if (capabilities !== undefined) {
    if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities)) {
      throw new CheckpointError('INVALID_CONFIG', 'capabilities must be a table');
    }
    const table = (capabilities as Record<string, unknown>).checkpoint;
    if (table !== undefined) return table;
  }
  return root.checkpoints;
}

/**
 * The per-project store folder name: the project folder's name plus a short hash of its canonical
 * path, so two projects with one name never share a store.
 */
export function projectKey(canonicalProjectRoot: string): string {
  const name = path.basename(canonicalProjectRoot).replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 40) || 'root';
  const digest = createHash('sha256').update(canonicalProjectRoot).digest('hex').slice(0, 12);
  return `${name}-${digest}`;
}

/** The default store folder for a project: under `$XDG_DATA_HOME/turnback/`, else `~/.local/share/turnback/`. */
export function defaultStoreDir(canonicalProjectRoot: string, env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_DATA_HOME;
  const base = xdg !== undefined && path.isAbsolute(xdg) ? xdg : path.join(homeFolder(env), '.local', 'share');
  return path.join(base, 'turnback', projectKey(canonicalProjectRoot));
}
