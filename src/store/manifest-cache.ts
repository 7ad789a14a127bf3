import type { CheckpointManifest } from '../core/model.js';

/** Manifest entries kept in memory across reads (a few hundred bytes each). */
const MANIFEST_CACHE_ENTRIES = 100_000;

/** Freezes `value` and everything reachable from it: a cached manifest is shared by every reader. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * Sealed manifests read by this process, least recently used first, shared by every store it
 * opens: a process that opens the same store again and again (the command server, one store per
 * command) reads each manifest once. An entry is keyed by the project root it was validated for
 * and the manifest's path, and is used only while the file keeps the same device, inode, size and
 * mtime: manifests are written once, by rename, so an unchanged identity is an unchanged file.
 */
export class ManifestCache {
  readonly #byKey = new Map<string, { identity: string; manifest: CheckpointManifest }>();
  #entries = 0;

  /** The manifest cached under `key` when its file still has `identity`. */
  get(key: string, identity: string): CheckpointManifest | undefined {
    const cached = this.#byKey.get(key);
    if (cached === undefined || cached.identity !== identity) return undefined;
    // Most recently used last, so eviction drops the least recently used.
    this.#byKey.delete(key);
    this.#byKey.set(key, cached);
    return cached.manifest;
  }

  /** Keeps `manifest` (frozen) under `key`, evicting the least recently used past the bound. */
  remember(key: string, identity: string, manifest: CheckpointManifest): void {
    this.forget(key);
    deepFreeze(manifest);
    this.#byKey.set(key, { identity, manifest });
    this.#entries += manifest.entries.length;
    for (const [oldKey, old] of this.#byKey) {
      if (this.#entries <= MANIFEST_CACHE_ENTRIES || oldKey === key) break;
      this.#byKey.delete(oldKey);
      this.#entries -= old.manifest.entries.length;
    }
  }

  /** Drops what is cached under `key` (its file is gone). */
  forget(key: string): void {
    const previous = this.#byKey.get(key);
    if (previous === undefined) return;
    this.#byKey.delete(key);
    this.#entries -= previous.manifest.entries.length;
  }
}

/** The process's one manifest cache. */
export const manifestCache: ManifestCache = new ManifestCache();
