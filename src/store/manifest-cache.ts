import type { CheckpointManifest } from '../core/model.js';
import { IdentityCache } from './identity-cache.js';

/** Manifest entries kept in memory across reads (a few hundred bytes each). */
const MANIFEST_CACHE_ENTRIES = 100_000;

/** Freezes `value` and everything reachable from it: a cached manifest is shared by every reader. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * Sealed manifests read by this process, shared by every store it opens, keyed by the project
 * root they were validated for and the manifest's path. Frozen: every reader shares them.
 */
export const manifestCache: IdentityCache<CheckpointManifest> = new IdentityCache<CheckpointManifest>(MANIFEST_CACHE_ENTRIES, (manifest) => manifest.entries.length);
