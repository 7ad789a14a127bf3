import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { isCheckpointId, type CheckpointId } from '../core/id.js';
import type { CheckpointManifest, PathState } from '../core/model.js';
import { gitBlobIdOf, isGitBlob } from '../core/git-blob.js';
import { manifestObjects } from '../store/manifests.js';
import type { CheckpointStore } from '../store/store.js';
import { storeBehind, type StoreView } from '../store/view.js';
import type { StoreBackend } from './backend.js';
import { encodeBundle, type BundledObject } from './bundle.js';
import { downloadBundle, type BundleOnDisk } from './bundle-file.js';
import type { WorkspaceIdentity } from './workspace-identity.js';

// Local first, remote behind (issue #16): checkpoints are taken in the local store as always, and
// pushed to a remote backend after — sealed ones only, oldest first. What a push sends, in order:
// the objects its manifests name that the remote lacks, in bundles (bundle.ts), each created
// once under its SHA-256 name; then, only once every bundle has landed, each manifest, created
// once under its id, with the map of which bundle holds each of its objects. As git pushes
// objects before the refs that name them, a remote manifest is visible only when everything it
// names is there: a push killed at any point, or cut off by the network, leaves bundles nothing
// names yet (the next push names them or sends its own), never a manifest naming what is missing.
//
// A pull on another machine — a clone of the project at any path — finds the manifests of its
// workspace (workspace-identity.ts), fetches the bundles they name, checks each bundle against
// its name and each object against its key as the local store takes it, and only then adds the
// manifest to the local store, for this project's root. From there `list`, `diff` and `undo` see
// the checkpoint as any other, and restore it through the same guarded engine.
//
// Remote layout, under the backend's prefix: `v1/<workspace>/bundles/<sha256>.tbb` and
// `v1/<workspace>/manifests/<checkpoint id>.json`.

/**
 * How young a bundle nothing names is spared by a prune: a push touches every bundle it names
 * (creates or reuses) before it writes the manifests that name them, and touches them again if it
 * has taken half this long; a prune that lists and deletes within half of it never deletes a
 * bundle a push is about to name.
 */
export const REMOTE_GRACE_MS: number = 60 * 60 * 1000;

/** The most bytes one bundle holds before a push starts another. */
const BUNDLE_BYTES = 32 * 1024 * 1024;
/** Bundles (and manifests) sent at once. */
const IN_FLIGHT = 4;
const FORMAT = 'turnback-remote-manifest';

/** A manifest as the remote keeps it. */
export interface RemoteManifest {
  format: typeof FORMAT;
  version: 1;
  workspace: { firstCommit: string; relativeRoot: string };
  manifest: CheckpointManifest;
  /** For every object the manifest names: the bundle holding it. */
  objects: Record<string, string>;
}

/** What a push did. */
export interface PushReport {
  /** Checkpoints now on the remote that were not before, oldest first. */
  pushed: CheckpointId[];
  /** Sealed checkpoints the remote had already. */
  alreadyThere: number;
  /** Objects and bytes sent (in bundles). */
  objects: number;
  bytes: number;
  bundles: number;
}

/** What a pull did. */
export interface PullReport {
  /** Checkpoints added to the local store, oldest first. */
  pulled: CheckpointId[];
  /** Remote checkpoints this store had already. */
  alreadyHere: number;
  /** Objects taken into the local store. */
  objects: number;
}

/** Options of a push or a pull. */
export interface SyncOptions {
  signal?: AbortSignal;
  /** Pull only this agent session's checkpoints (the `sessionId` they were taken with). */
  sessionId?: string;
}

/** Where a workspace's bundles and manifests are on the remote. */
export function keysOf(workspace: WorkspaceIdentity): { manifests: string; bundles: string; pruned: string; bundle(name: string): string; manifest(id: string): string } {
  const base = `v1/${workspace.id}`;
  return {
    manifests: `${base}/manifests/`,
    bundles: `${base}/bundles/`,
    // A checkpoint a remote prune removed: no machine pushes it back.
    pruned: `${base}/pruned/`,
    bundle: (name) => `${base}/bundles/${name}.tbb`,
    manifest: (id) => `${base}/manifests/${id}.json`,
  };
}

/** The checkpoint ids the remote holds for `workspace`. */
export async function remoteCheckpointIds(backend: StoreBackend, workspace: WorkspaceIdentity, options: SyncOptions = {}): Promise<CheckpointId[]> {
  const keys = keysOf(workspace);
  const ids: CheckpointId[] = [];
  for await (const entry of backend.list(keys.manifests, options.signal !== undefined ? { signal: options.signal } : {})) {
    const name = entry.key.slice(keys.manifests.length);
    const id = name.endsWith('.json') ? name.slice(0, -'.json'.length) : '';
    if (isCheckpointId(id)) ids.push(id);
  }
  return ids.sort();
}

/** A remote manifest, checked to be this workspace's and this id's. */
export async function readRemoteManifest(backend: StoreBackend, workspace: WorkspaceIdentity, id: CheckpointId, options: SyncOptions): Promise<RemoteManifest> {
  const bytes = await backend.get(keysOf(workspace).manifest(id), options.signal !== undefined ? { signal: options.signal } : {});
  if (bytes === undefined) throw new CheckpointError('UNKNOWN_CHECKPOINT', `the remote has no checkpoint ${id}`, { found: id });
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new CheckpointError('CORRUPT_MANIFEST', `the remote copy of checkpoint ${id} does not parse`, { found: id, cause: error });
  }
  const remote = value as Partial<RemoteManifest> | null;
  if (remote?.format !== FORMAT || remote.version !== 1 || typeof remote.manifest !== 'object' || remote.manifest === null || typeof remote.objects !== 'object' || remote.objects === null) {
    throw new CheckpointError('CORRUPT_MANIFEST', `the remote copy of checkpoint ${id} is not a turnback remote manifest`, { found: id });
  }
  if (remote.manifest.id !== id) throw new CheckpointError('CORRUPT_MANIFEST', `the remote copy of checkpoint ${id} names another id`, { found: String(remote.manifest.id) });
  if (remote.workspace?.firstCommit !== workspace.firstCommit || remote.workspace.relativeRoot !== workspace.relativeRoot) {
    throw new CheckpointError('FOREIGN_WORKSPACE', `the remote copy of checkpoint ${id} belongs to another workspace`, { found: id });
  }
  return remote as RemoteManifest;
}

/**
 * Pushes every sealed checkpoint of `store` that the remote lacks (see the module comment for
 * the order that keeps the remote whole). Reading the remote's own listing decides what it has,
 * so a push after a crash, a lost network or another machine's push sends exactly the rest.
 * @throws CheckpointError `REMOTE_UNAVAILABLE`, `REMOTE_REFUSED`; the local store is never changed.
 */
export async function pushCheckpoints(view: StoreView | CheckpointStore, backend: StoreBackend, workspace: WorkspaceIdentity, options: SyncOptions = {}): Promise<PushReport> {
  const store = storeBehind(view);
  const call = options.signal !== undefined ? { signal: options.signal } : {};
  const keys = keysOf(workspace);
  const remoteIds = new Set(await remoteCheckpointIds(backend, workspace, options));
  for await (const entry of backend.list(keys.pruned, call)) remoteIds.add(entry.key.slice(keys.pruned.length) as CheckpointId);
  const local = await store.sealedIds();
  const toPush = local.filter((id) => !remoteIds.has(id));
  const report: PushReport = { pushed: [], alreadyThere: local.length - toPush.length, objects: 0, bytes: 0, bundles: 0 };
  if (toPush.length === 0) {
    await recordPushed(store, backend.location, local);
    return report;
  }
  const manifests = await Promise.all(toPush.map((id) => store.manifest(id)));

  // Which bundle holds each object the remote has (an object already there is named, not sent
  // again). A push after every turn must not read every remote manifest each time: this store keeps an
  // index of what the remote manifests it has read name (`state/remote-index.json`), and reads
  // only those it has not seen (another machine's). A hint, never trusted alone: every bundle it
  // names is touched below, and one found gone has its objects sent again.
  const index = await readRemoteIndex(store, backend.location, workspace);
  for (const id of [...remoteIds].sort()) {
    if (index.seen.has(id)) continue;
    const remote = await readRemoteManifest(backend, workspace, id, options).catch(() => undefined);
    if (remote === undefined) continue;
    for (const [key, bundle] of Object.entries(remote.objects)) if (isBundleName(bundle)) index.objects.set(key, bundle);
    index.seen.add(id);
  }
  const wanted = new Set(manifests.flatMap((m) => manifestObjects(m)));
  const held = new Map<string, string>();
  for (const key of wanted) {
    const bundle = index.objects.get(key);
    if (bundle !== undefined) held.set(key, bundle);
  }
  // A bundle named by a remote manifest was there when that manifest was written; a prune (on
  // any machine) may remove it once nothing names it and it is older than the grace period. So
  // each bundle reused is touched first — a young bundle is never pruned — and one that is gone
  // already has its objects sent again.
  const freshSince = Date.now();
  for (const bundle of new Set(held.values())) {
    if (await backend.touch(keys.bundle(bundle), call)) continue;
    for (const [key, holder] of held) if (holder === bundle) held.delete(key);
  }
  const missing = [...wanted].filter((key) => !held.has(key)).sort();

  // The bundles, each complete before any manifest naming it is written.
  let batch: BundledObject[] = [];
  let batchBytes = 0;
  const sends: Promise<void>[] = [];
  const send = async (objects: BundledObject[]): Promise<void> => {
    const bundle = encodeBundle(objects);
    // The same bytes sent before (by this machine or another): young again, or created again if a prune took it meanwhile.
    for (let attempt = 1; ; attempt++) {
      if ((await backend.create(keys.bundle(bundle.name), bundle.bytes, call)) === 'created') break;
      if (await backend.touch(keys.bundle(bundle.name), call)) break;
      if (attempt === 5) throw new CheckpointError('REMOTE_UNAVAILABLE', `bundle ${bundle.name} is said to exist but cannot be touched; push again`, { found: 'server-error' });
    }
    for (const object of objects) held.set(object.key, bundle.name);
    report.objects += objects.length;
    report.bytes += bundle.bytes.length;
    report.bundles += 1;
  };
  for (const key of missing) {
    options.signal?.throwIfAborted();
    // Bytes resting on git's objects are sent too: the remote must not depend on this clone's git.
    const bytes = await store.readObject(key);
    batch.push({ key, bytes });
    batchBytes += bytes.length;
    if (batchBytes >= BUNDLE_BYTES) {
      sends.push(send(batch));
      batch = [];
      batchBytes = 0;
      if (sends.length >= IN_FLIGHT) await Promise.all(sends.splice(0));
    }
  }
  if (batch.length > 0) sends.push(send(batch));
  await Promise.all(sends);

  // A push slower than half the grace period touches its bundles again before naming them.
  if (Date.now() - freshSince > REMOTE_GRACE_MS / 2) {
    for (const bundle of new Set(held.values())) {
      if (!(await backend.touch(keys.bundle(bundle), call))) throw new CheckpointError('REMOTE_UNAVAILABLE', `bundle ${bundle} went from the remote during a long push; push again`, { found: 'server-error' });
    }
  }

  // Then the manifests, oldest first, in small waves.
  for (let i = 0; i < manifests.length; i += IN_FLIGHT) {
    await Promise.all(
      manifests.slice(i, i + IN_FLIGHT).map(async (manifest) => {
        const objects: Record<string, string> = {};
        for (const key of manifestObjects(manifest)) objects[key] = held.get(key) as string;
        const remote: RemoteManifest = { format: FORMAT, version: 1, workspace: { firstCommit: workspace.firstCommit, relativeRoot: workspace.relativeRoot }, manifest: withRestorableModes(manifest), objects };
        await backend.create(keys.manifest(manifest.id), Buffer.from(JSON.stringify(remote)), call);
      }),
    );
    report.pushed.push(...manifests.slice(i, i + IN_FLIGHT).map((m) => m.id));
  }
  for (const manifest of manifests) {
    index.seen.add(manifest.id);
    remoteIds.add(manifest.id);
  }
  for (const [key, bundle] of held) index.objects.set(key, bundle);
  await writeRemoteIndex(store, backend.location, workspace, index, remoteIds);
  await recordPushed(store, backend.location, local);
  return report;
}

/** A bundle's name as a push makes it (a SHA-256 in hex): anything else read from a remote or the index is ignored. */
function isBundleName(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}

/** The state document of {@link readRemoteIndex}. */
const INDEX_STATE = 'remote-index';

/** What this store knows of a remote's manifests: those it has read (or written), and the bundle of each object they name. */
interface RemoteIndex {
  seen: Set<string>;
  objects: Map<string, string>;
}

async function readRemoteIndex(store: CheckpointStore, location: string, workspace: WorkspaceIdentity): Promise<RemoteIndex> {
  const doc = (await store.readState(INDEX_STATE).catch(() => undefined)) as { location?: unknown; workspace?: unknown; seen?: unknown; objects?: unknown } | undefined;
  const index: RemoteIndex = { seen: new Set(), objects: new Map() };
  if (doc?.location !== location || doc.workspace !== workspace.id || !Array.isArray(doc.seen) || typeof doc.objects !== 'object' || doc.objects === null) return index;
  for (const id of doc.seen as unknown[]) if (typeof id === 'string') index.seen.add(id);
  for (const [key, bundle] of Object.entries(doc.objects as Record<string, unknown>)) if (isBundleName(bundle)) index.objects.set(key, bundle);
  return index;
}

/** Most objects the index keeps; past it, it starts again (the next push reads the manifests). */
const INDEX_MAX_OBJECTS = 200_000;

/**
 * Saves the index, keeping only the manifests the remote still lists. Objects of pruned
 * manifests may stay: every use is checked by a touch. Never throws: a lost index costs reads.
 */
async function writeRemoteIndex(store: CheckpointStore, location: string, workspace: WorkspaceIdentity, index: RemoteIndex, listed: ReadonlySet<string>): Promise<void> {
  const tooBig = index.objects.size > INDEX_MAX_OBJECTS;
  const seen = tooBig ? [] : [...index.seen].filter((id) => listed.has(id)).sort();
  const doc = { location, workspace: workspace.id, seen, objects: tooBig ? {} : Object.fromEntries(index.objects) };
  await store.writeState(INDEX_STATE, doc, { durable: false }).catch(() => undefined);
}

/** The state document that says what the last push to a remote left there. */
const PUSHED_STATE = 'remote-pushed';

/** Notes, for `status`, which sealed checkpoints the remote at `location` holds now. Never throws: a lost note costs a line of status. */
async function recordPushed(store: CheckpointStore, location: string, ids: readonly CheckpointId[]): Promise<void> {
  await store.writeState(PUSHED_STATE, { location, at: new Date().toISOString(), ids }, { durable: false }).catch(() => undefined);
}

/** What `status` says of a remote store: sealed checkpoints not pushed since the last push there, and when that was. */
export interface UnpushedReport {
  location: string;
  /** Sealed checkpoints of this store the last push to `location` did not leave there. */
  unpushed: number;
  /** When the last push to `location` ended; `undefined`: never pushed from here. */
  lastPushAt: string | undefined;
}

/** Sealed checkpoints of `view` not pushed to `location` yet, from what the last push noted (no network). */
export async function unpushedCheckpoints(view: StoreView | CheckpointStore, location: string): Promise<UnpushedReport> {
  const store = storeBehind(view);
  const sealed = await store.sealedIds();
  const note = (await store.readState(PUSHED_STATE).catch(() => undefined)) as { location?: unknown; at?: unknown; ids?: unknown } | undefined;
  if (note?.location !== location || !Array.isArray(note.ids) || typeof note.at !== 'string') return { location, unpushed: sealed.length, lastPushAt: undefined };
  const pushed = new Set(note.ids as unknown[]);
  return { location, unpushed: sealed.filter((id) => !pushed.has(id)).length, lastPushAt: note.at };
}

/**
 * Pulls the remote's checkpoints of `workspace` that `store` lacks (only `sessionId`'s, when
 * given) into `store`, for its project root; objects are checked against their keys as they
 * land, and a manifest is added only once all its objects are here.
 * @throws CheckpointError `REMOTE_UNAVAILABLE`, `REMOTE_REFUSED`, `INTEGRITY` (a damaged bundle:
 *   nothing of that checkpoint is added), `CORRUPT_MANIFEST`.
 */
export async function pullCheckpoints(view: StoreView | CheckpointStore, backend: StoreBackend, workspace: WorkspaceIdentity, options: SyncOptions = {}): Promise<PullReport> {
  const store = storeBehind(view);
  const call = options.signal !== undefined ? { signal: options.signal } : {};
  const keys = keysOf(workspace);
  const report: PullReport = { pulled: [], alreadyHere: 0, objects: 0 };
  // Each bundle downloaded once into the store's scratch space, checked, read back object by object.
  const bundles = new Map<string, BundleOnDisk>();
  try {
    for (const id of await remoteCheckpointIds(backend, workspace, options)) {
      options.signal?.throwIfAborted();
      if (await hasCheckpoint(store, id)) {
        report.alreadyHere += 1;
        continue;
      }
      const remote = await readRemoteManifest(backend, workspace, id, options);
      if (options.sessionId !== undefined && remote.manifest.sessionId !== options.sessionId) continue;
      // Before anything of it is fetched or stored: a tampered mode is refused, not stripped later.
      const modeProblem = untrustedModeProblem(remote.manifest);
      if (modeProblem !== undefined) throw new CheckpointError('CORRUPT_MANIFEST', `the remote copy of checkpoint ${id} ${modeProblem}: turnback never records such a mode, so it was not pulled`, { found: id });
      // Objects resting on the pushing clone's git come back as this store's own objects.
      const renamed = new Map<string, { object: string; hash: string }>();
      for (const key of manifestObjects(remote.manifest)) {
        const isGitKey = gitBlobIdOf(key) !== undefined;
        if (!isGitKey && (await store.hasObject(key))) continue;
        if (renamed.has(key)) continue;
        const bundleName = remote.objects[key];
        if (!isBundleName(bundleName)) throw new CheckpointError('CORRUPT_MANIFEST', `the remote copy of checkpoint ${id} does not say where object ${key} is`, { found: key });
        let bundle = bundles.get(bundleName);
        if (bundle === undefined) {
          bundle = await downloadBundle(backend, keys.bundle(bundleName), bundleName, store.scratchPath(), call);
          if (bundle === undefined) throw new CheckpointError('INTEGRITY', `the remote has lost bundle ${bundleName}, which checkpoint ${id} names`, { expected: bundleName });
          bundles.set(bundleName, bundle);
        }
        const bytes = await bundle.read(key);
        if (bytes === undefined) throw new CheckpointError('INTEGRITY', `bundle ${bundleName} does not hold object ${key} of checkpoint ${id}`, { expected: key });
        const ref = await store.putBytes(bytes);
        if (isGitKey) {
          if (!isGitBlob(bytes, gitBlobIdOf(key) as string)) throw new CheckpointError('INTEGRITY', `object ${key} of checkpoint ${id} is not that git blob`, { expected: key });
          renamed.set(key, { object: ref.object, hash: ref.hash });
        } else if (ref.object !== key) {
          throw new CheckpointError('INTEGRITY', `object ${key} of checkpoint ${id} came back as ${ref.object}`, { expected: key, found: ref.object });
        }
        report.objects += 1;
      }
      const manifest: CheckpointManifest = { ...remote.manifest, workspace: store.projectRoot, entries: remote.manifest.entries.map((entry) => ({ ...entry, before: renamedState(entry.before, renamed) })) };
      if (await store.importManifest(manifest)) report.pulled.push(id);
      else report.alreadyHere += 1;
    }
  } finally {
    for (const bundle of bundles.values()) await bundle.close();
  }
  return report;
}

/**
 * The permission bits a remote manifest may carry: what a restore ever writes back (`& 0o777`,
 * see restore/modes.ts). A push sends no more ({@link withRestorableModes}), so a set-id or sticky
 * bit, or anything past 0o777, in a pulled manifest was put there by someone else.
 */
const REMOTE_MODE_BITS = 0o777;

function isRemoteMode(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 0 && ((value as number) & ~REMOTE_MODE_BITS) === 0;
}

/**
 * Why a pulled manifest's modes are refused (`undefined`: they are modes turnback records). Reads
 * an untrusted value: anything that is not as expected is left to the manifest parser at import.
 */
function untrustedModeProblem(manifest: unknown): string | undefined {
  const entries = (manifest as { entries?: unknown } | null)?.entries;
  if (!Array.isArray(entries)) return undefined;
  for (const entry of entries as unknown[]) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { path, before, afterMode } = entry as { path?: unknown; before?: unknown; afterMode?: unknown };
    const mode = typeof before === 'object' && before !== null ? (before as { mode?: unknown }).mode : undefined;
    const where = typeof path === 'string' ? JSON.stringify(path.slice(0, 200)) : 'an entry';
    if (mode !== undefined && !isRemoteMode(mode)) return `gives ${where} mode ${modeText(mode)}`;
    if (afterMode !== undefined && !isRemoteMode(afterMode)) return `gives ${where} the after-mode ${modeText(afterMode)}`;
  }
  return undefined;
}

function modeText(value: unknown): string {
  return Number.isInteger(value) && (value as number) >= 0 ? `0o${(value as number).toString(8)}` : JSON.stringify(String(value).slice(0, 40));
}

/** `manifest` with every mode cut to the bits a restore writes back: what a push sends. */
function withRestorableModes(manifest: CheckpointManifest): CheckpointManifest {
  const cut = (mode: number): number => mode & REMOTE_MODE_BITS;
  if (manifest.entries.every((entry) => (entry.afterMode === undefined || entry.afterMode === cut(entry.afterMode)) && !hasExtraModeBits(entry.before))) return manifest;
  return {
    ...manifest,
    entries: manifest.entries.map((entry) => ({
      ...entry,
      before: hasExtraModeBits(entry.before) ? { ...entry.before, mode: cut((entry.before as { mode: number }).mode) } : entry.before,
      ...(entry.afterMode !== undefined ? { afterMode: cut(entry.afterMode) } : {}),
    })) as CheckpointManifest['entries'],
  };
}

function hasExtraModeBits(state: PathState): boolean {
  return (state.type === 'file' || state.type === 'uncopied') && (state.mode & ~REMOTE_MODE_BITS) !== 0;
}

function renamedState(state: PathState, renamed: ReadonlyMap<string, { object: string; hash: string }>): PathState {
  if (state.type !== 'file') return state;
  const to = renamed.get(state.object);
  return to === undefined ? state : { ...state, object: to.object, hash: to.hash };
}

async function hasCheckpoint(store: CheckpointStore, id: CheckpointId): Promise<boolean> {
  try {
    await store.manifest(id);
    return true;
  } catch (error) {
    if (isCheckpointError(error, 'UNKNOWN_CHECKPOINT')) return false;
    throw error;
  }
}
