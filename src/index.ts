/**
 * turnback — file checkpoints for AI agent runtimes.
 *
 * The public API: the observer seam ({@link WriteObserver}, {@link CheckpointObserver},
 * {@link observerForConfig}, and {@link openCheckpoints} with its {@link UnavailableCheckpoints}
 * stand-in), the store ({@link CheckpointStore}), reference write tools, and the
 * one error class. Everything else is internal.
 *
 * @packageDocumentation
 */
export { CheckpointError, isCheckpointError, type CheckpointErrorCode } from './core/errors.js';
export { isCheckpointId, parseCheckpointId, checkpointIdTime, type CheckpointId } from './core/id.js';
export type {
  CallRecord,
  CheckpointKind,
  CheckpointManifest,
  CheckpointMeta,
  Fingerprint,
  Gap,
  ManifestEntry,
  PathState,
  SideEffect,
  UncopiedReason,
} from './core/model.js';
export type { DiskState } from './fs/disk-state.js';
export type { ModePolicy } from './restore/modes.js';
export type { PlanAction, PlanEntry, PlanReason, RestorePlan } from './restore/plan.js';
export { CheckpointStore, DEFAULT_RETAIN, type PruneReport, type StateWriteOptions, type VerifyReport } from './store/store.js';
export {
  checkpointTableOf,
  defaultStoreDir,
  projectKey,
  resolveCheckpointConfig,
  type CheckpointConfig,
  type ResolvedCheckpointConfig,
} from './session/config.js';
export {
  CheckpointObserver,
  type CallAttribution,
  type CallBeginOptions,
  type CallBeginResult,
  type CheckpointObserverOptions,
  type RestoreFailure,
  type RestoreOptions,
  type RestoreReport,
  type SnapshotInfo,
  type SnapshotScope,
  type TurnChanges,
} from './session/observer.js';
export {
  changesSinceInterrupted,
  dismissInterrupted,
  interruptedRuns,
  type ChangesSinceInterrupted,
  type InterruptedCall,
} from './session/interrupted.js';
export type { Change } from './capture/diff.js';
export { workspaceRefusal, type CoverageOptions, type WorkspaceRefusal } from './capture/coverage.js';
export { observerForConfig, openCheckpoints, type CheckpointConfigInput, type ObserverForConfigOptions } from './session/open.js';
export { isUnavailable, UnavailableCheckpoints, type Unavailable, type UnavailableReason } from './session/unavailable.js';
export type { Discard, IrreversibleCall } from './session/timeline.js';
export { discardedCheckpoints } from './session/discards.js';
export type { WriteObserver, WriteOp } from './session/write-observer.js';
export { deletePath, editFile, guardedWrite, movePath, writeFile, type ToolContext } from './tools/reference-tools.js';
