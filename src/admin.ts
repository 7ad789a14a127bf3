/**
 * turnback/admin — the read-and-maintain side that the `turnback` command and operators use:
 * open a project's store as a {@link StoreView} (list, manifests, objects, verify, prune, sizes),
 * build an observer over it, find interrupted runs, and resolve the `[checkpoints]` config. Nothing
 * here writes a checkpoint or an object except through the observer and its restore engine.
 *
 * @packageDocumentation
 */
export { DEFAULTS } from './core/defaults.js';
export { leftText } from './core/left-text.js';
export { isPidAlive } from './core/pid.js';
export { warmStatHelper } from './fs/parallel-lstat.js';
export { startWatchman, type WatchmanOptions, type WatchmanRefusal } from './fs/watchman.js';
export { ownWatchman, WATCHMAN_CONFIG, type OwnWatchman, type OwnWatchmanRefusal } from './fs/watchman-service.js';
export type { NotVouchedReason, TreeWatcher, WatchAnswer, WatcherStatus } from './fs/tree-watcher.js';
export { closeWatchers, useWatchers, watchReport, type WatchDisagreement, type WatcherFactory, type WatchReport } from './capture/watchers.js';
export { verifyWatchedProjects } from './capture/watch-verify.js';
export { workspaceRefusal, type WorkspaceRefusal } from './capture/coverage.js';
export { openStore, openObserver, type OpenStoreOptions, type OpenObserverOptions } from './session/admin-open.js';
export {
  checkpointTableOf,
  defaultStoreDir,
  projectKey,
  resolveCheckpointConfig,
  type CheckpointConfig,
  type RemoteStoreConfig,
  type ResolvedCheckpointConfig,
} from './session/config.js';
export {
  changesSinceInterrupted,
  dismissInterrupted,
  interruptedRuns,
  type ChangesSinceInterrupted,
  type InterruptedCall,
} from './session/interrupted.js';
export { recoverInterruptedRestores, type RecoveredRestore } from './session/interrupted-restore.js';
export { discardedCheckpoints, type DiscardedOptions } from './session/discards.js';
export type { StoreView } from './store/view.js';
export type { GitCopiesMark, GitCopyOptions, GitCopyReport } from './store/git-copies.js';
export { unpushedCheckpoints, type UnpushedReport } from './remote/sync.js';
export { goneMessage, type Removal, type RemovalReason } from './store/removals.js';
