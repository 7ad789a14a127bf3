import * as path from 'node:path';
import { types } from 'node:util';
import { z } from 'zod';
import { resolveSavepointLimits, type SavepointLimits } from '../capture/savepoint-walk.js';
import { CheckpointError, isCheckpointError } from '../core/errors.js';
import { toProjectPath } from '../fs/paths.js';
import type { CheckpointId } from '../core/id.js';
import type { CheckpointObserver } from '../session/observer.js';
import type { RestoreReport } from '../session/restore-types.js';
import { SAVEPOINT_REASON_MAX, type SavepointDiff, type SavepointInfo } from '../session/savepoints.js';

// The model's own savepoint tool, framework-neutral: a name, a description, the JSON Schema the
// model sees, and `execute`. The input is checked whole before any file is read; the answer is
// one structured JSON report, the same for the model and the caller, never file content.

/** The tool's name, as the model calls it. */
export const SAVEPOINT_TOOL_NAME = 'undo_savepoint';

const ACTIONS = ['save', 'list', 'diff', 'restore'] as const;
/** The fields each action takes besides `action`. */
const FIELDS: Record<(typeof ACTIONS)[number], readonly string[]> = { save: ['reason'], list: [], diff: ['id'], restore: ['id', 'confirm'] };

/** A checked input of the savepoint tool. */
export interface SavepointInput {
  action: (typeof ACTIONS)[number];
  reason?: string | undefined;
  id?: string | undefined;
  confirm?: boolean | undefined;
}

/**
 * The input, one definition for both checking and the JSON Schema the model sees. The schema is
 * one flat object (function-calling APIs want an object at the top); which fields go with which
 * action is checked by the refinement and said in each field's description.
 */
export const savepointInput: z.ZodType<SavepointInput> = z
  .strictObject({
    action: z.enum(ACTIONS).describe('save: make a savepoint; list: this workspace\'s savepoints; diff: compare one with the files now; restore: write one back'),
    reason: z.string().max(SAVEPOINT_REASON_MAX).optional().describe('save only: why (at most 4,096 characters)'),
    id: z.string().min(1).max(64).optional().describe('diff and restore only: the exact savepoint id'),
    confirm: z.boolean().optional().describe('restore only: must be true; check the diff first, a restore overwrites newer changes'),
  })
  .superRefine((input, context) => {
    const allowed = new Set(FIELDS[input.action]);
    for (const key of Object.keys(input)) {
      if (key !== 'action' && !allowed.has(key)) context.addIssue({ code: 'custom', path: [key], message: `${key} does not belong to action ${input.action}` });
    }
    if ((input.action === 'diff' || input.action === 'restore') && input.id === undefined) context.addIssue({ code: 'custom', path: ['id'], message: `${input.action} needs the exact savepoint id` });
    if (input.action === 'restore' && input.confirm !== true) context.addIssue({ code: 'custom', path: ['confirm'], message: 'restore needs confirm: true (check the diff first: a restore overwrites newer changes)' });
  });


/** What the model and the caller read back from a call. */
export type SavepointReport =
  | {
      ok: true;
      action: 'save';
      savepoint: SavepointInfo;
      /** Set when the savepoint holds no file: what the tracked paths held and why nothing was kept. */
      warning?: string;
    }
  | { ok: true; action: 'list'; count: number; savepoints: SavepointInfo[] }
  | ({ ok: true; action: 'diff' } & SavepointDiff)
  | {
      ok: boolean;
      action: 'restore';
      id: CheckpointId;
      /** Files written back (overwritten or recreated). */
      restored: string[];
      /** Files that already held the savepoint's content. */
      unchanged: number;
      /** The checkpoint that saved what the restore overwrote: restoring it undoes this restore. */
      preRestoreId: CheckpointId | null;
      /** Temporary files left after the commit, to remove by hand; never a failed restore. */
      cleanupPending: string[];
      /** Set when the restore failed and was rolled back. */
      failure?: { path: string; error: string; code?: string };
      /** Set when the rollback itself could not put everything back: inspect these paths. */
      rollbackIncomplete?: string[];
    };

/** What {@link createSavepointTool} takes. */
export interface SavepointToolOptions {
  /** The session's observer: savepoints go into its store. */
  observer: CheckpointObserver;
  /**
   * Project-relative paths whose files a savepoint holds: an array of strings, each inside the
   * project and outside `.git` (`INVALID_ARGUMENT`, `OUTSIDE_ROOT`, `INVALID_PATH` otherwise, when
   * the tool is made). @default ['.']
   */
  trackedPaths?: readonly string[];
  /** Files per savepoint and bytes per file (defaults 400 and 256 KiB; ceilings 2,000 and 2 MiB). */
  limits?: Partial<SavepointLimits>;
}

/** The tool, in the shape every framework adapter builds on. */
export interface SavepointTool {
  readonly name: typeof SAVEPOINT_TOOL_NAME;
  readonly description: string;
  /** JSON Schema of the input (draft 2020-12), derived from {@link savepointInput}. */
  readonly inputSchema: Record<string, unknown>;
  /**
   * Runs one call. @throws CheckpointError with a typed code for a bad input (nothing read or
   * written), an unknown id, another workspace's savepoint, a busy workspace, a disposed tool.
   */
  execute(input: unknown, options?: { signal?: AbortSignal }): Promise<SavepointReport>;
  /** Aborts what is running (a restore rolls back) and refuses later calls. */
  dispose(): void;
}

/** Workspaces with a savepoint operation running (one at a time per workspace, in this process). */
const running = new Set<string>();

/**
 * Copies a model's input into a plain object, refusing what is not plain data: a class instance,
 * an array, a getter or setter, a symbol key. Nothing of the input runs after this (a getter is
 * never called). @throws CheckpointError `INVALID_ARGUMENT`
 */
export function plainInput(input: unknown): Record<string, unknown> {
  // A Proxy's traps would run on the first look (its prototype, its keys): refused unlooked at.
  if (types.isProxy(input)) throw new CheckpointError('INVALID_ARGUMENT', 'the input must be a plain JSON object, not a Proxy');
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new CheckpointError('INVALID_ARGUMENT', 'the input must be a JSON object');
  const proto: unknown = Object.getPrototypeOf(input);
  if (proto !== Object.prototype && proto !== null) throw new CheckpointError('INVALID_ARGUMENT', 'the input must be a plain JSON object');
  const copy: Record<string, unknown> = {};
  for (const key of Reflect.ownKeys(input)) {
    if (typeof key !== 'string') throw new CheckpointError('INVALID_ARGUMENT', 'the input must not have symbol keys');
    const descriptor = Object.getOwnPropertyDescriptor(input, key);
    if (descriptor === undefined || !('value' in descriptor)) throw new CheckpointError('INVALID_ARGUMENT', `${key} must be a plain value, not a getter`);
    const value: unknown = descriptor.value;
    if ((value !== null && typeof value === 'object') || typeof value === 'function') throw new CheckpointError('INVALID_ARGUMENT', `${key} must be a string or a boolean`);
    copy[key] = value;
  }
  return copy;
}

/** Checks a model's input whole. @throws CheckpointError `INVALID_ARGUMENT` naming every problem. */
export function parseSavepointInput(input: unknown): SavepointInput {
  const parsed = savepointInput.safeParse(plainInput(input));
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message));
  throw new CheckpointError('INVALID_ARGUMENT', `invalid undo_savepoint input: ${problems.join('; ')}`);
}

const DESCRIPTION = [
  'Savepoints of the workspace files, made and restored by you.',
  'save (optional reason) records the files now and answers with the savepoint id;',
  'list shows this workspace\'s savepoints (id, reason, time, truncated);',
  'diff (id) says which files changed or went missing since;',
  'restore (id, confirm: true) writes the savepoint\'s files back (files created since stay).',
  'Check the diff before restoring: a restore overwrites newer changes. File contents are never returned.',
].join(' ');

/**
 * The savepoint tool over `observer`'s store (savepoints are checkpoints of kind `savepoint`).
 *
 * @example
 * const tool = createSavepointTool({ observer });
 * const { savepoint } = await tool.execute({ action: 'save', reason: 'before the refactor' });
 * @throws CheckpointError `INVALID_ARGUMENT` for limits past their ceilings.
 */
export function createSavepointTool(options: SavepointToolOptions): SavepointTool {
  const observer = checkedObserver(options);
  const limits = resolveSavepointLimits(options.limits);
  const trackedPaths = checkedTrackedPaths(observer.projectRoot, options.trackedPaths);
  const disposed = new AbortController();
  const inputSchema = z.toJSONSchema(savepointInput, { unrepresentable: 'any' }) as Record<string, unknown>;

  const run = async (input: SavepointInput, signal: AbortSignal): Promise<SavepointReport> => {
    switch (input.action) {
      case 'save': {
        const savepoint = await observer.savepoint({ ...(input.reason !== undefined ? { reason: input.reason } : {}), trackedPaths, limits });
        if (savepoint.files > 0) return { ok: true, action: 'save', savepoint };
        const warning = `the savepoint holds no file: ${trackedPaths.join(', ')} held no file a savepoint keeps (links, .git, credential files, dependency and build folders are never kept)`;
        return { ok: true, action: 'save', savepoint, warning };
      }
      case 'list': {
        const savepoints = await observer.listSavepoints();
        return { ok: true, action: 'list', count: savepoints.length, savepoints };
      }
      case 'diff':
        return { ok: true, action: 'diff', ...(await observer.diffSavepoint(input.id as CheckpointId, { maxFileBytes: limits.maxFileBytes })) };
      case 'restore':
        return restoreReport(await observer.restoreSavepoint(input.id as CheckpointId, { signal }));
    }
  };

  return {
    name: SAVEPOINT_TOOL_NAME,
    description: DESCRIPTION,
    inputSchema,
    async execute(raw: unknown, callOptions: { signal?: AbortSignal } = {}): Promise<SavepointReport> {
      if (disposed.signal.aborted) throw new CheckpointError('CLOSED', 'the undo_savepoint tool was disposed');
      const input = parseSavepointInput(raw);
      const workspace = observer.projectRoot;
      if (running.has(workspace)) throw new CheckpointError('STORE_BUSY', 'another undo_savepoint operation is running in this workspace; try again when it ends');
      running.add(workspace);
      try {
        const signal = callOptions.signal === undefined ? disposed.signal : AbortSignal.any([callOptions.signal, disposed.signal]);
        signal.throwIfAborted();
        return await run(input, signal);
      } finally {
        running.delete(workspace);
      }
    },
    dispose(): void {
      disposed.abort(new CheckpointError('CLOSED', 'the undo_savepoint tool was disposed'));
    },
  };
}

/** The options' observer, checked to be one before anything uses it. @throws CheckpointError `INVALID_ARGUMENT` */
function checkedObserver(options: SavepointToolOptions | undefined): CheckpointObserver {
  if (typeof options !== 'object' || options === null) throw new CheckpointError('INVALID_ARGUMENT', 'createSavepointTool takes an options object with the session\'s observer');
  const observer: unknown = options.observer;
  const looksLikeOne = typeof observer === 'object' && observer !== null && typeof (observer as CheckpointObserver).projectRoot === 'string' && typeof (observer as CheckpointObserver).savepoint === 'function';
  if (!looksLikeOne) throw new CheckpointError('INVALID_ARGUMENT', `the undo_savepoint tool needs the session's observer (options.observer), got ${observer === null ? 'null' : typeof observer}`);
  return observer as CheckpointObserver;
}

/**
 * The tracked paths, checked whole when the tool is made: an array of strings, each the project
 * (`.`) or a path inside it and outside `.git`. A path that would hold nothing by rule (`.git`)
 * or could never be held (outside the project) is refused here rather than saving 0 files on
 * every call. @throws CheckpointError `INVALID_ARGUMENT`, `INVALID_PATH`, `OUTSIDE_ROOT`
 */
function checkedTrackedPaths(projectRoot: string, value: unknown): readonly string[] {
  if (value === undefined) return ['.'];
  if (types.isProxy(value) || !Array.isArray(value)) throw new CheckpointError('INVALID_ARGUMENT', `trackedPaths must be an array of project paths, got ${value === null ? 'null' : typeof value === 'string' ? `the string ${JSON.stringify(value)}` : typeof value}`);
  if (value.length === 0) throw new CheckpointError('INVALID_ARGUMENT', 'trackedPaths is empty: a savepoint would hold nothing');
  const checked: string[] = [];
  for (const item of value as unknown[]) {
    if (typeof item !== 'string') throw new CheckpointError('INVALID_ARGUMENT', `trackedPaths must hold strings only, got ${item === null ? 'null' : typeof item}`);
    if (item.length > 0 && !item.includes('\0') && path.resolve(projectRoot, item) === path.resolve(projectRoot)) {
      checked.push('.');
      continue;
    }
    try {
      checked.push(toProjectPath(projectRoot, item));
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new CheckpointError(isCheckpointError(error) ? error.code : 'INVALID_PATH', `tracked path ${JSON.stringify(item)} cannot be held: ${reason}`, { path: item });
    }
  }
  return Object.freeze(checked);
}

function restoreReport(report: RestoreReport): SavepointReport {
  const restored = report.restored.map((entry) => entry.path);
  const failure = report.failed.find((f) => !f.error.startsWith('rolled back') && !f.error.startsWith('not attempted'));
  return {
    ok: report.failed.length === 0,
    action: 'restore',
    id: report.checkpointId,
    restored,
    unchanged: report.skipped.filter((entry) => entry.reason === 'already-matches').length,
    preRestoreId: report.preRestoreId ?? null,
    cleanupPending: report.failed.length === 0 ? report.cleanupPending : [],
    ...(failure !== undefined ? { failure: { path: failure.path, error: failure.error, ...(failure.code !== undefined ? { code: failure.code } : {}) } } : {}),
    ...(report.failed.length > 0 && report.cleanupPending.length > 0 ? { rollbackIncomplete: report.cleanupPending } : {}),
  };
}
