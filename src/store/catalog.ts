import * as path from 'node:path';
import { asCheckpointError, errnoCode } from '../core/errors.js';
import { isCheckpointId, type CheckpointId } from '../core/id.js';
import { readdirOnThread, type FileSystem } from '../fs/file-system.js';
import type { StoreLayout } from './layout.js';

/** One checkpoint as found in `checkpoints/`: a sealed manifest, a journal, or both (a seal cut short). */
export interface CatalogEntry {
  id: CheckpointId;
  sealed: boolean;
  journal: boolean;
}

/** What `checkpoints/` holds. */
export interface Catalog {
  /** Checkpoints sorted by id (= chronologically). */
  entries: CatalogEntry[];
  /** Absolute paths of files that are neither manifests nor journals (interrupted atomic writes). */
  strays: string[];
}

const NAME = /^(.+)\.(json|journal)$/;

/** Lists the checkpoints in the store. */
export async function scanCatalog(fs: FileSystem, layout: StoreLayout): Promise<Catalog> {
  let names: string[];
  try {
    names = await readdirOnThread(fs, layout.checkpointsDir);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return { entries: [], strays: [] };
    throw asCheckpointError(error, 'cannot list checkpoints', layout.checkpointsDir);
  }
  const byId = new Map<CheckpointId, CatalogEntry>();
  const strays: string[] = [];
  for (const name of names) {
    const match = NAME.exec(name);
    const id = match?.[1];
    if (!match || !isCheckpointId(id)) {
      strays.push(path.join(layout.checkpointsDir, name));
      continue;
    }
    let entry = byId.get(id);
    if (!entry) {
      entry = { id, sealed: false, journal: false };
      byId.set(id, entry);
    }
    if (match[2] === 'json') entry.sealed = true;
    else entry.journal = true;
  }
  const entries = [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { entries, strays };
}
