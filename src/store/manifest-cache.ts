import { CheckpointError, asCheckpointError, errnoCode } from '../core/errors.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointManifest } from '../core/model.js';
import { statOnThread, type FileSystem } from '../fs/file-system.js';
import { buildManifest } from './checkpoint-writer.js';
import { IdentityCache } from './identity-cache.js';
import type { JournalContents } from './journal.js';
import type { StoreLayout } from './layout.js';
import { readManifest } from './manifests.js';

// One checkpoint's manifest as a reader gets it: a sealed one from the process's cache while its
// file is unchanged, an open one folded from its journal.

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

/**
 * A sealed manifest, validated when read and kept (frozen, in the process's manifest cache)
 * while its file keeps the same device, inode, size and mtime: manifests are written once, by
 * rename, so a listing or a plan that reads every checkpoint costs one `stat` per unchanged
 * manifest instead of a parse — in this store and in every later store of this process.
 * `undefined` when there is none.
 */
export async function readSealedManifest(fs: FileSystem, layout: StoreLayout, projectRoot: string, id: CheckpointId): Promise<CheckpointManifest | undefined> {
  const file = layout.manifestPath(id);
  const key = `${projectRoot}\0${file}`;
  let identity: string;
  try {
    // A hook event lists the store: every manifest is looked at, so not one pool trip each.
    const stats = await statOnThread(fs, file);
    identity = `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') {
      manifestCache.forget(key);
      return undefined;
    }
    throw asCheckpointError(error, 'cannot read manifest', file);
  }
  const cached = manifestCache.get(key, identity);
  if (cached !== undefined) return cached;
  const manifest = await readManifest(fs, layout, id, projectRoot);
  if (manifest === undefined) return undefined;
  manifestCache.remember(key, identity, deepFreeze(manifest));
  return manifest;
}

/**
 * The manifest of an open checkpoint: its journal folded, `complete: false`, with a
 * `journal-corrupt` gap for every damaged line dropped.
 * @throws CheckpointError `CORRUPT_MANIFEST` (no valid header), `FOREIGN_WORKSPACE`.
 */
export function journalManifest(layout: StoreLayout, projectRoot: string, id: CheckpointId, contents: JournalContents): CheckpointManifest {
  const file = layout.journalPath(id);
  const header = contents.header;
  if (!header || header.meta.id !== id) throw new CheckpointError('CORRUPT_MANIFEST', `journal ${id} has no valid header`, { path: file });
  if (header.meta.workspace !== projectRoot) {
    throw new CheckpointError('FOREIGN_WORKSPACE', `journal belongs to another project`, { path: file, expected: projectRoot, found: header.meta.workspace });
  }
  const manifest = buildManifest(header.meta, contents.records, { complete: false });
  if (contents.corruptLines > 0) {
    manifest.gaps.push({ reason: 'journal-corrupt', detail: `${contents.corruptLines} journal line(s) failed their checksum and were dropped` });
  }
  return manifest;
}
