import { CheckpointStore } from '../store/store.js';
import { viewOf, type StoreView } from '../store/view.js';
import type { ResolvedCheckpointConfig } from './config.js';
import { CheckpointObserver } from './observer.js';
import { observerOptionsFromConfig } from './options.js';

/** Options of {@link openStore}. */
export interface OpenStoreOptions {
  /** The project the store belongs to; canonicalised with realpath. */
  projectRoot: string;
}

/**
 * Opens (creating when needed) the store folder `storeDir` of a project, as its read-and-maintain
 * view. Pass the view to {@link openObserver} to capture or restore.
 *
 * @throws CheckpointError `STORE_UNAVAILABLE` (symlink, not a folder, inside `.git`, unwritable,
 *   unknown format), `FOREIGN_WORKSPACE` (another project's store), `UNAVAILABLE` (project root
 *   missing), `INVALID_ARGUMENT`.
 */
export async function openStore(storeDir: string, options: OpenStoreOptions): Promise<StoreView> {
  return viewOf(await CheckpointStore.open(storeDir, { projectRoot: options?.projectRoot }));
}

/** Options of {@link openObserver}. */
export interface OpenObserverOptions {
  /** The resolved `[checkpoints]` config whose limits, skip list and snapshot cap apply. @default the defaults */
  config?: ResolvedCheckpointConfig;
  /** Names the observer's checkpoints. @default a random id */
  sessionId?: string;
  /** The process whose life the session's open calls follow (see `CheckpointObserverOptions.ownerPid`). @default process.pid */
  ownerPid?: number;
  /** When every whole-tree picture of the observer must end (see `CheckpointObserverOptions.pictureDeadline`). @default each picture's own budget */
  pictureDeadline?: number;
}

/** A {@link CheckpointObserver} over a store opened with {@link openStore}. */
export function openObserver(store: StoreView, options: OpenObserverOptions = {}): CheckpointObserver {
  return new CheckpointObserver({
    store,
    ...(options.config !== undefined ? observerOptionsFromConfig(options.config) : {}),
    ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    ...(options.ownerPid !== undefined ? { ownerPid: options.ownerPid } : {}),
    ...(options.pictureDeadline !== undefined ? { pictureDeadline: options.pictureDeadline } : {}),
  });
}
