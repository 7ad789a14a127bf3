/**
 * turnback — file checkpoints for AI agent runtimes.
 *
 * What a framework author and a tool author use: the factories ({@link observerForConfig},
 * {@link openCheckpoints}), the {@link CheckpointObserver} with its option and report types, the
 * {@link UnavailableCheckpoints} stand-in, checkpoint ids, the one error class, and the reference
 * write tools with {@link guardedWrite}. The read-and-maintain side (listing, verify, prune, the
 * store itself) is the second entry, `turnback/admin`.
 *
 * @packageDocumentation
 */
export { CheckpointError, isCheckpointError, type CheckpointErrorCode, type CheckpointErrorDetails } from './core/errors.js';
export { isCheckpointId, parseCheckpointId, checkpointIdTime, type CheckpointId } from './core/id.js';
export type {
  CallRecord,
  CheckpointKind,
  CheckpointManifest,
  CheckpointMeta,
  CoverageCounts,
  Fingerprint,
  Gap,
  GapReason,
  LeftByLimit,
  ManifestEntry,
  PathState,
  SideEffect,
  UncopiedReason,
} from './core/model.js';
export type { Change } from './capture/diff.js';
export type { CoverageOptions } from './capture/coverage.js';
export type { DiskState } from './fs/disk-state.js';
export type { RestoreFailureCode } from './restore/apply.js';
export type { ModePolicy } from './restore/modes.js';
export type { PlanAction, PlanEntry, PlanReason, RestorePlan } from './restore/plan.js';
export type { StoreView } from './store/view.js';
export type { GitCopiesMark, GitCopyOptions, GitCopyReport } from './store/git-copies.js';
export type { PruneOptions, PruneReason, PruneReport } from './store/retention.js';
export type { VerifyProblem, VerifyReport, VerifyStep } from './store/verify.js';
export type { CheckpointConfig } from './session/config.js';
export { CheckpointObserver } from './session/observer.js';
export type { CheckpointObserverOptions } from './session/options.js';
export type { CallAttribution, CallBeginOptions, CallBeginResult, CallEndOptions, DetachedCallBeginResult } from './session/calls.js';
export type { RestoreFailure, RestoreOptions, RestoreReport } from './session/restore-types.js';
export type { SnapshotInfo, SnapshotScope } from './session/snapshots.js';
export type { SavepointDiff, SavepointInfo, SavepointSaveOptions } from './session/savepoints.js';
export type { SavepointLimits } from './capture/savepoint-walk.js';
export type { TurnChanges } from './session/turns.js';
export type { Discard, IrreversibleCall } from './session/timeline.js';
export { observerForConfig, openCheckpoints, type CheckpointConfigInput, type ObserverForConfigOptions } from './session/open.js';
export { isUnavailable, UnavailableCheckpoints, type Unavailable, type UnavailableReason } from './session/unavailable.js';
export type { WriteObserver, WriteOp } from './session/write-observer.js';
export { deletePath, editFile, guardedWrite, movePath, writeFile, type ToolContext } from './tools/reference-tools.js';
