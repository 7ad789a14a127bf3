import { AsyncLocalStorage } from 'node:async_hooks';
import { capturePath, type PathCaptureContext } from '../capture/capture-path.js';
import { CheckpointError } from '../core/errors.js';
import { loadHasher } from '../core/hash.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest, CheckpointMeta } from '../core/model.js';
import type { CheckpointStore, CheckpointWriter } from '../store/store.js';

/** Identifies a tool-call snapshot. */
export interface SnapshotScope {
  sessionId: string;
  /** The tool call, canonically the ACP `toolCallId`. */
  scopeId: string;
}

/** A snapshot as listed. */
export interface SnapshotInfo extends SnapshotScope {
  checkpointId: CheckpointId;
  createdAt: string;
  /** True while it is open and auto-capturing writes made inside its tool call. */
  open: boolean;
  paths: string[];
  bytes: number;
}

interface OpenSnapshot {
  writer: CheckpointWriter;
  scope: SnapshotScope;
  touched: Map<string, Promise<void>>;
  createdAt: string;
}

/**
 * Per-tool-call snapshots: a `snapshot` checkpoint per tool call, captured explicitly or
 * automatically for writes made inside {@link SnapshotKeeper.withToolCall} (an
 * `AsyncLocalStorage` names the scope, enabled only while a tool call runs), sealed when the call
 * ends, and bounded per session by a byte cap that evicts the oldest.
 */
export class SnapshotKeeper {
  #toolContext: AsyncLocalStorage<SnapshotScope> | undefined;
  #activeToolCalls = 0;
  readonly #open = new Map<string, OpenSnapshot>();

  constructor(
    private readonly capture: PathCaptureContext,
    private readonly capBytes: number,
    /** Settles the deferred post-write hashes before a snapshot is sealed. */
    private readonly hashPending: () => Promise<void>,
  ) {}

  private get store(): CheckpointStore {
    return this.capture.store;
  }

  /** The open snapshot of the tool call whose async context this is, if any. */
  current(): OpenSnapshot | undefined {
    const scope = this.#toolContext?.getStore();
    return scope === undefined ? undefined : this.#open.get(snapshotKey(scope));
  }

  /** Runs `fn` as tool call `scope` (see {@link CheckpointObserver.withToolCall}). */
  async withToolCall<T>(scope: SnapshotScope, fn: () => Promise<T>): Promise<T> {
    assertScope(scope);
    const context = (this.#toolContext ??= new AsyncLocalStorage<SnapshotScope>());
    this.#activeToolCalls++;
    try {
      return await context.run({ sessionId: scope.sessionId, scopeId: scope.scopeId }, fn);
    } finally {
      if (await this.#close(scope)) await this.#enforceCap(scope.sessionId);
      this.#activeToolCalls--;
      if (this.#activeToolCalls === 0 && this.#toolContext === context) {
        // Node 20 keeps promise hooks on while any AsyncLocalStorage is enabled: switch it off.
        context.disable();
        this.#toolContext = undefined;
      }
    }
  }

  /** Captures `projectPath` into the current tool call's open snapshot, once per snapshot. */
  async captureIfScoped(projectPath: string): Promise<void> {
    const snapshot = this.current();
    if (snapshot === undefined) return;
    const inFlight = snapshot.touched.get(projectPath);
    if (inFlight !== undefined) return inFlight;
    const capture = (async () => {
      const captured = await capturePath(this.capture, projectPath);
      if (captured.gap !== undefined) await snapshot.writer.append({ op: 'gap', gap: captured.gap });
      await snapshot.writer.append({ op: 'before', path: projectPath, state: captured.state });
    })();
    snapshot.touched.set(projectPath, capture);
    await capture;
  }

  /** Registers a snapshot (see {@link CheckpointObserver.snapshot}); `paths` are already project paths. */
  async open(scope: SnapshotScope, paths: ReadonlySet<string> | undefined): Promise<SnapshotInfo> {
    const key = snapshotKey(scope);
    if (this.#open.has(key)) throw new CheckpointError('INVALID_ARGUMENT', `snapshot ${scope.scopeId} is already open`);
    const writer = await this.store.openCheckpoint({ kind: 'snapshot', sessionId: scope.sessionId, scopeId: scope.scopeId, label: scope.scopeId });
    const createdAt = new Date().toISOString();
    const touched = new Map<string, Promise<void>>();
    if (paths !== undefined) {
      await loadHasher();
      for (const path of paths) {
        const captured = await capturePath(this.capture, path);
        if (captured.gap !== undefined) await writer.append({ op: 'gap', gap: captured.gap });
        await writer.append({ op: 'before', path, state: captured.state });
        touched.set(path, Promise.resolve());
      }
    }
    // Explicit or not, the snapshot stays open until its tool call ends (or it is restored or
    // dropped), so writes through the observer inside the call record the post-write state the
    // restore guard needs.
    this.#open.set(key, { writer, scope: { ...scope }, touched, createdAt });
    return { ...scope, checkpointId: writer.id, createdAt, open: true, paths: [...touched.keys()].sort(), bytes: 0 };
  }

  /** The snapshots of a session, sorted by capture time. */
  async list(sessionId: string): Promise<SnapshotInfo[]> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'sessionId must be a non-empty string');
    const metas = (await this.store.list()).filter((m) => m.kind === 'snapshot' && m.sessionId === sessionId);
    const infos: SnapshotInfo[] = [];
    for (const meta of metas) {
      const open = [...this.#open.values()].some((o) => o.writer.id === meta.id);
      infos.push(snapshotInfo(await this.store.manifest(meta.id), open));
    }
    return infos;
  }

  /**
   * Seals the scope's open snapshot, then finds all its checkpoints, oldest first (for a
   * restore). A tool call retried under the same id has one per attempt: a restore folds them
   * all, so each path goes back to the first pre-image any attempt took, never to what an
   * earlier attempt left.
   */
  async find(scope: SnapshotScope): Promise<CheckpointMeta[]> {
    assertScope(scope);
    await this.#close(scope);
    const metas = (await this.store.list())
      .filter((m) => m.kind === 'snapshot' && m.sessionId === scope.sessionId && m.scopeId === scope.scopeId)
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    if (metas.length === 0) throw new CheckpointError('UNKNOWN_CHECKPOINT', `no snapshot for tool call ${scope.scopeId} in session ${scope.sessionId}`);
    return metas;
  }

  /** Removes a snapshot's state; its objects go at the next prune unless something else uses them. */
  async drop(scope: SnapshotScope): Promise<void> {
    assertScope(scope);
    const open = this.#open.get(snapshotKey(scope));
    if (open !== undefined) {
      this.#open.delete(snapshotKey(scope));
      await open.writer.seal();
    }
    const metas = (await this.store.list()).filter((m) => m.kind === 'snapshot' && m.sessionId === scope.sessionId && m.scopeId === scope.scopeId);
    for (const meta of metas) await this.store.dropCheckpoint(meta.id);
  }

  /** Seals every open snapshot of `sessionId` (a drop of the session). */
  async sealSession(sessionId: string): Promise<void> {
    for (const [key, open] of this.#open) {
      if (open.scope.sessionId === sessionId) {
        this.#open.delete(key);
        await open.writer.seal();
      }
    }
  }

  /**
   * Stops auto-capture into the scope's open snapshot and seals it once its captures and
   * post-write hashes have settled. False when no snapshot was open.
   */
  async #close(scope: SnapshotScope): Promise<boolean> {
    const open = this.#open.get(snapshotKey(scope));
    if (open === undefined) return false;
    this.#open.delete(snapshotKey(scope));
    await Promise.allSettled(open.touched.values());
    await this.hashPending();
    await open.writer.seal();
    return true;
  }

  async #enforceCap(sessionId: string): Promise<void> {
    const snapshots = await this.list(sessionId);
    let total = snapshots.reduce((sum, s) => sum + s.bytes, 0);
    for (const snapshot of snapshots) {
      if (total <= this.capBytes) break;
      if (snapshot.open) continue;
      await this.store.dropCheckpoint(snapshot.checkpointId);
      total -= snapshot.bytes;
    }
  }
}

/** @throws CheckpointError `INVALID_ARGUMENT` unless `scope` has a non-empty sessionId and scopeId. */
export function assertScope(scope: unknown): asserts scope is SnapshotScope {
  const candidate = scope as Partial<SnapshotScope> | null;
  if (typeof candidate !== 'object' || candidate === null || typeof candidate.sessionId !== 'string' || candidate.sessionId.length === 0 || typeof candidate.scopeId !== 'string' || candidate.scopeId.length === 0) {
    throw new CheckpointError('INVALID_ARGUMENT', 'a snapshot needs a non-empty sessionId and scopeId');
  }
}

function snapshotKey(scope: SnapshotScope): string {
  return `${scope.sessionId}\0${scope.scopeId}`;
}

function snapshotInfo(manifest: CheckpointManifest, open: boolean): SnapshotInfo {
  const bytes = manifest.entries.reduce((sum, e) => sum + (e.before.type === 'file' ? e.before.size : 0), 0);
  return {
    sessionId: manifest.sessionId ?? '',
    scopeId: manifest.scopeId ?? '',
    checkpointId: manifest.id,
    createdAt: manifest.createdAt,
    open,
    paths: manifest.entries.map((e) => e.path),
    bytes,
  };
}
