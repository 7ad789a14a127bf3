import type { CheckpointId } from '../core/id.js';
import type { RestoreFailureCode } from '../restore/apply.js';
import type { ModePolicy } from '../restore/modes.js';
import type { PlanEntry, RestorePlan } from '../restore/plan.js';
import type { IrreversibleCall } from './timeline.js';

// The restore's options and report: the public shapes of `plan` and `restore`, apart from the
// Restorer that produces them (restorer.ts).

/** Options of {@link CheckpointObserver.plan} and {@link CheckpointObserver.restore}. */
export interface RestoreOptions {
  /** Restore only these paths (absolute or project-relative). Must be non-empty when given. */
  paths?: string[];
  /**
   * What happens to files created since the checkpoint: `delete` (rewind), `keep`, or `own`
   * (undo): the files the checkpoint itself created, still exactly as recorded and changed by no
   * later turn, are deleted (saved first, like every write); those created later are kept.
   * @default 'delete'
   */
  created?: 'delete' | 'keep' | 'own';
  /**
   * Mode policy: `exact` puts back the recorded mode (minus set-id and sticky bits);
   * `never-widen` keeps owner read/write and never grants exec, group-write or other-write.
   * @default 'exact'
   */
  modePolicy?: ModePolicy;
  /**
   * The plan a person previewed. Any path whose disk state differs from what that preview saw,
   * or that the preview did not list as a write, is refused (`changed-since-plan`) instead of
   * written: a restore never does more than was shown.
   */
  expect?: RestorePlan;
  /**
   * Paths (absolute or project-relative) to restore although they would be refused: their last
   * change has no record, or what is there now is not what the session last recorded (a write
   * killed mid-way, or killed before its record was written, leaves such a file while its
   * pre-image is kept). Only these paths, by name; the preview shows each as forced, and what
   * they hold now is saved first. @default none
   */
  force?: string[];
  /**
   * The label of the `pre-restore` checkpoint that saves what this restore overwrites (the
   * command passes `before undo of …` or `before redo`). @default none
   */
  saveLabel?: string;
  /**
   * Cancels the restore before its commit point: everything it wrote is rolled back (and the
   * failed entries say `ABORT_ERR`); once past the commit point it finishes. A person's Ctrl-C
   * reaches a restore this way. @default none
   */
  signal?: AbortSignal;
  /**
   * fsync every restored file before it is published and its folder after (power-loss
   * durability). Off by default: like `git checkout`, a restore survives a process crash but not
   * necessarily a power loss right after it (see the durability table in CHECKPOINT-DESIGN.md).
   * @default false
   */
  durable?: boolean;
}

/** A failed write in a restore. */
export interface RestoreFailure {
  path: string;
  error: string;
  /** A {@link CheckpointErrorCode}, an errno code (`EACCES`, …), or `ABORT_ERR`; absent when unknown. */
  code?: RestoreFailureCode;
}

/** The receipt of a restore. Arrays list plan entries by outcome. */
export interface RestoreReport {
  /** Always true here; surfaces that can be unavailable return an `Unavailable` value instead. */
  available: true;
  /** The checkpoint restored to. */
  checkpointId: CheckpointId;
  /** The `pre-restore` checkpoint that saved what this restore overwrote; restore it to undo. */
  preRestoreId: CheckpointId | undefined;
  restored: PlanEntry[];
  refused: PlanEntry[];
  skipped: PlanEntry[];
  failed: RestoreFailure[];
  /** Calls after the checkpoint whose side effects (network, desktop) a file restore cannot undo. */
  irreversible: IrreversibleCall[];
  /** Temporary files the restore could not remove; inspect them by hand. */
  cleanupPending: string[];
  /** Stage and displaced files an earlier restore left when its process died, removed now (their content was saved first). */
  removedLeftovers: string[];
  /** Folders made since the checkpoint that this restore's deletes emptied, removed after them (`created: 'delete'`). */
  removedFolders: string[];
}
