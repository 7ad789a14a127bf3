import { closeSync, openSync, renameSync, rmSync } from 'node:fs';
import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import { isCheckpointId, type CheckpointId } from '../core/id.js';
import { CALL_IGNORED_DELETED_MAX, CALL_NOTE_MAX_CHARS, CALL_NOTES_MAX, type CheckpointKind, type CheckpointManifest, type CheckpointMeta } from '../core/model.js';
import { writeAllSync, type FileSystem } from '../fs/file-system.js';
import { FILE_MODE, type StoreLayout } from './layout.js';
import { isObjectKey } from './object-codec.js';
import { gitBlobIdOf } from '../core/git-blob.js';
import { loadHasher } from '../core/hash.js';
import { decodeDocument, encodeDocument } from './document-codec.js';

const KINDS: ReadonlySet<string> = new Set<CheckpointKind>(['turn', 'call', 'snapshot', 'pre-restore', 'savepoint']);
const UNCOPIED_REASONS: ReadonlySet<string> = new Set([
  'too-large',
  'credential',
  'picture-budget',
  'changed-during-capture',
  'unreadable',
  'store-busy',
  'store-full',
]);
const OTHER_KINDS: ReadonlySet<string> = new Set(['directory', 'fifo', 'socket', 'device', 'unknown']);
const SIDE_EFFECTS: ReadonlySet<string> = new Set(['none', 'filesystem', 'network', 'desktop_control']);
const HASH = /^[0-9a-f]{16}$/;

/** True when `value` is a {@link CheckpointKind}. */
export function isCheckpointKind(value: unknown): value is CheckpointKind {
  return typeof value === 'string' && KINDS.has(value);
}

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function extraKey(value: Obj, allowed: readonly string[]): string | undefined {
  return Object.keys(value).find((k) => !allowed.includes(k));
}

function isSize(value: unknown): boolean {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

// Permission bits are what the store records, but a full st_mode (file-type bits included) is tolerated.
function isMode(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 0o177777;
}

function optString(value: unknown): boolean {
  return value === undefined || typeof value === 'string';
}

/** Checks a recorded {@link PathState}; returns a reason when invalid. */
export function validatePathState(value: unknown): string | undefined {
  if (!isObj(value)) return 'state is not an object';
  switch (value.type) {
    case 'file':
      if (extraKey(value, ['type', 'object', 'hash', 'size', 'mode', 'ino', 'sha256'])) return 'file: unexpected field';
      if (value.ino !== undefined && !isSize(value.ino)) return 'file: bad inode';
      if (value.sha256 !== undefined && (typeof value.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(value.sha256))) return 'file: bad sha256';
      // A file recorded by its git blob id names it as both its object and its hash.
      if (gitBlobIdOf(value.object) !== undefined) {
        if (value.hash !== value.object) return 'file: bad hash';
      } else {
        if (!isObjectKey(value.object)) return 'file: bad object key';
        if (typeof value.hash !== 'string' || !HASH.test(value.hash)) return 'file: bad hash';
      }
      if (!isSize(value.size) || !isMode(value.mode)) return 'file: bad size or mode';
      return undefined;
    case 'absent':
      return extraKey(value, ['type']) ? 'absent: unexpected field' : undefined;
    case 'symlink':
      if (extraKey(value, ['type', 'target'])) return 'symlink: unexpected field';
      return typeof value.target === 'string' ? undefined : 'symlink: bad target';
    case 'uncopied':
      if (extraKey(value, ['type', 'reason', 'size', 'mode', 'hash'])) return 'uncopied: unexpected field';
      if (typeof value.reason !== 'string' || !UNCOPIED_REASONS.has(value.reason)) return 'uncopied: bad reason';
      if (!isSize(value.size) || !isMode(value.mode)) return 'uncopied: bad size or mode';
      return value.hash === undefined || (typeof value.hash === 'string' && HASH.test(value.hash)) ? undefined : 'uncopied: bad hash';
    case 'other':
      if (extraKey(value, ['type', 'kind'])) return 'other: unexpected field';
      return typeof value.kind === 'string' && OTHER_KINDS.has(value.kind) ? undefined : 'other: bad kind';
    default:
      return `unknown state type ${JSON.stringify(value.type)}`;
  }
}

/** Checks a {@link Gap}; returns a reason when invalid. */
export function validateGap(value: unknown): string | undefined {
  if (!isObj(value)) return 'gap is not an object';
  if (extraKey(value, ['path', 'reason', 'detail'])) return 'gap: unexpected field';
  return typeof value.reason === 'string' && typeof value.detail === 'string' && optString(value.path) ? undefined : 'gap: bad fields';
}

function validCoverage(value: unknown): boolean {
  if (!isObj(value) || extraKey(value, ['files', 'ignored', 'credential', 'tooLarge', 'onGit', 'left'])) return false;
  if (value.onGit !== undefined && !(Number.isSafeInteger(value.onGit) && (value.onGit as number) >= 0)) return false;
  if (value.left !== undefined && !validLeft(value.left)) return false;
  return ['files', 'ignored', 'credential', 'tooLarge'].every((key) => Number.isSafeInteger(value[key]) && (value[key] as number) >= 0);
}

function validLeft(value: unknown): boolean {
  if (!isObj(value) || extraKey(value, ['reason', 'folders', 'trackedPictured', 'trackedMissed'])) return false;
  if (value.reason !== 'walk-entries' && value.reason !== 'time-limit') return false;
  const count = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;
  return count(value.folders) && (value.trackedPictured === undefined || count(value.trackedPictured)) && (value.trackedMissed === undefined || count(value.trackedMissed));
}

/** Checks a {@link CallRecord}; returns a reason when invalid. */
export function validateCallRecord(value: unknown): string | undefined {
  if (!isObj(value)) return 'call is not an object';
  if (extraKey(value, ['callId', 'sideEffect', 'startedAt', 'endedAt', 'incompletePaths', 'exitCode', 'notes', 'coverage', 'ignoredDeleted', 'ignoredDeletedMore'])) return 'call: unexpected field';
  if (value.ignoredDeleted !== undefined && !(Array.isArray(value.ignoredDeleted) && value.ignoredDeleted.length <= CALL_IGNORED_DELETED_MAX && value.ignoredDeleted.every((p) => isRecordedPath(typeof p === 'string' && p.endsWith('/') ? p.slice(0, -1) : p)))) return 'call: bad ignoredDeleted';
  if (value.ignoredDeletedMore !== undefined && !(Number.isSafeInteger(value.ignoredDeletedMore) && (value.ignoredDeletedMore as number) > 0)) return 'call: bad ignoredDeletedMore';
  if (value.coverage !== undefined && !validCoverage(value.coverage)) return 'call: bad coverage';
  if (value.exitCode !== undefined && !Number.isSafeInteger(value.exitCode)) return 'call: bad exitCode';
  if (value.notes !== undefined && !(Array.isArray(value.notes) && value.notes.length <= CALL_NOTES_MAX && value.notes.every((n) => typeof n === 'string' && n.length <= CALL_NOTE_MAX_CHARS))) return 'call: bad notes';
  if (typeof value.callId !== 'string' || typeof value.sideEffect !== 'string' || !SIDE_EFFECTS.has(value.sideEffect)) return 'call: bad id or side effect';
  if (typeof value.startedAt !== 'string' || !optString(value.endedAt)) return 'call: bad times';
  if (value.incompletePaths !== undefined && !(Array.isArray(value.incompletePaths) && value.incompletePaths.every((p) => typeof p === 'string'))) {
    return 'call: bad incompletePaths';
  }
  return undefined;
}

/** True for a canonical recorded path: non-empty `/`-separated segments, none empty, `.` or `..`. */
export function isRecordedPath(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0 || value.includes('\0')) return false;
  return value.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..');
}

const MANIFEST_KEYS = [
  'format',
  'version',
  'id',
  'kind',
  'sessionId',
  'label',
  'createdAt',
  'workspace',
  'complete',
  'entryCount',
  'restoreOf',
  'scopeId',
  'entries',
  'gaps',
  'calls',
] as const;

/** Returns the first schema violation of a parsed manifest, or `undefined` when it is valid. */
export function manifestProblem(value: unknown): string | undefined {
  if (!isObj(value)) return 'not an object';
  const extra = extraKey(value, MANIFEST_KEYS);
  if (extra !== undefined) return `unexpected field ${JSON.stringify(extra)}`;
  if (value.format !== 'turnback-manifest') return 'bad format';
  if (value.version !== 1) return `unsupported version ${JSON.stringify(value.version)}`;
  if (!isCheckpointId(value.id)) return 'bad id';
  if (!isCheckpointKind(value.kind)) return 'bad kind';
  if (!optString(value.sessionId) || !optString(value.label) || !optString(value.scopeId)) return 'bad sessionId, label or scopeId';
  if (typeof value.createdAt !== 'string' || Number.isNaN(Date.parse(value.createdAt))) return 'bad createdAt';
  if (typeof value.workspace !== 'string' || value.workspace === '') return 'bad workspace';
  if (typeof value.complete !== 'boolean') return 'bad complete';
  if (value.restoreOf !== undefined && !isCheckpointId(value.restoreOf)) return 'bad restoreOf';
  if (!Array.isArray(value.entries) || !Array.isArray(value.gaps) || !Array.isArray(value.calls)) return 'entries, gaps or calls not arrays';
  if (value.entryCount !== value.entries.length) return 'entryCount does not match entries';
  const seen = new Set<string>();
  for (const [index, entry] of value.entries.entries()) {
    if (!isObj(entry)) return `entry ${index} is not an object`;
    if (extraKey(entry, ['path', 'before', 'after', 'afterMode', 'callId', 'incomplete'])) return `entry ${index}: unexpected field`;
    if (!isRecordedPath(entry.path)) return `entry ${index}: bad path`;
    if (seen.has(entry.path as string)) return `entry ${index}: duplicate path`;
    seen.add(entry.path as string);
    const stateProblem = validatePathState(entry.before);
    if (stateProblem !== undefined) return `entry ${index}: ${stateProblem}`;
    if (!optString(entry.after) || !optString(entry.callId)) return `entry ${index}: bad after or callId`;
    if (entry.afterMode !== undefined && !isMode(entry.afterMode)) return `entry ${index}: bad afterMode`;
    if (entry.incomplete !== undefined && typeof entry.incomplete !== 'boolean') return `entry ${index}: bad incomplete`;
  }
  for (const gap of value.gaps) {
    const problem = validateGap(gap);
    if (problem !== undefined) return problem;
  }
  for (const call of value.calls) {
    const problem = validateCallRecord(call);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * Parses and validates manifest text.
 *
 * @throws CheckpointError `CORRUPT_MANIFEST` on a parse or schema failure, or when the id differs
 *   from `expectedId`; `FOREIGN_WORKSPACE` when the workspace differs from `workspace`.
 */
export function parseManifest(text: string, expected: { id?: CheckpointId; workspace: string; file?: string }): CheckpointManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError('CORRUPT_MANIFEST', `manifest does not parse`, { path: expected.file, cause: error });
  }
  const problem = manifestProblem(value);
  if (problem !== undefined) throw new CheckpointError('CORRUPT_MANIFEST', `invalid manifest: ${problem}`, { path: expected.file });
  const manifest = value as CheckpointManifest;
  if (expected.id !== undefined && manifest.id !== expected.id) {
    throw new CheckpointError('CORRUPT_MANIFEST', `manifest id does not match its file name`, { path: expected.file, expected: expected.id, found: manifest.id });
  }
  if (manifest.workspace !== expected.workspace) {
    throw new CheckpointError('FOREIGN_WORKSPACE', `manifest belongs to another project`, {
      path: expected.file,
      expected: expected.workspace,
      found: manifest.workspace,
    });
  }
  return manifest;
}

/**
 * Reads a sealed manifest, or `undefined` when there is none.
 *
 * @throws CheckpointError `CORRUPT_MANIFEST`, `FOREIGN_WORKSPACE`, `IO`.
 */
export async function readManifest(fs: FileSystem, layout: StoreLayout, id: CheckpointId, workspace: string): Promise<CheckpointManifest | undefined> {
  const file = layout.manifestPath(id);
  let bytes: Buffer;
  try {
    bytes = await fs.readFile(file);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw asCheckpointError(error, 'cannot read manifest', file);
  }
  let text: string;
  try {
    text = await decodeDocument(bytes);
  } catch (error) {
    throw new CheckpointError('CORRUPT_MANIFEST', `manifest does not decode`, { path: file, cause: error });
  }
  return parseManifest(text, { id, workspace, file });
}

/**
 * Writes a manifest atomically: a temp file in the store's `tmp/` (prune removes a dead writer's),
 * written on the calling thread, then renamed into place. Not fsynced (see CHECKPOINT-DESIGN.md
 * "Durability"): the objects and the journal it is sealed from are not either, so an fsync here
 * promised more than a power loss leaves of the checkpoint. After a power loss the manifest may be
 * missing, empty or torn: one that does not parse reads as `CORRUPT_MANIFEST`, and while its
 * journal (removed only after this returns) is still there, the journal is read in its place.
 */
export async function writeManifest(layout: StoreLayout, manifest: CheckpointManifest): Promise<void> {
  const problem = manifestProblem(manifest);
  if (problem !== undefined) throw new CheckpointError('INVALID_ARGUMENT', `refusing to write an invalid manifest: ${problem}`);
  const file = layout.manifestPath(manifest.id);
  await loadHasher();
  // A large manifest is compressed (document-codec.ts); a small one stays plain JSON.
  const bytes = encodeDocument(`${JSON.stringify(manifest)}\n`);
  const temp = layout.tempPath();
  try {
    const fd = openSync(temp, 'wx', FILE_MODE);
    try {
      writeAllSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
  } catch (error) {
    rmSync(temp, { force: true });
    throw asCheckpointError(error, 'cannot write manifest', file);
  }
}

/** The listing form of a manifest. */
export function metaOf(manifest: CheckpointManifest): CheckpointMeta {
  const meta: CheckpointMeta = {
    id: manifest.id,
    kind: manifest.kind,
    createdAt: manifest.createdAt,
    workspace: manifest.workspace,
    complete: manifest.complete,
    entryCount: manifest.entries.length,
  };
  if (manifest.sessionId !== undefined) meta.sessionId = manifest.sessionId;
  if (manifest.label !== undefined) meta.label = manifest.label;
  if (manifest.restoreOf !== undefined) meta.restoreOf = manifest.restoreOf;
  if (manifest.scopeId !== undefined) meta.scopeId = manifest.scopeId;
  return meta;
}

/** Object keys a manifest references. */
export function manifestObjects(manifest: Pick<CheckpointManifest, 'entries'>): string[] {
  const keys: string[] = [];
  for (const entry of manifest.entries) if (entry.before.type === 'file') keys.push(entry.before.object);
  return keys;
}
