import { realpath } from 'node:fs/promises';
import { workspaceRefusal } from '../capture/coverage.js';
import { CheckpointStore } from '../store/store.js';
import { checkpointTableOf, defaultStoreDir, resolveCheckpointConfig, type CheckpointConfig } from './config.js';
import { CheckpointObserver } from './observer.js';

/** Options of {@link observerForConfig}. */
export interface ObserverForConfigOptions {
  /** The project the agent works in. */
  projectRoot: string;
  /** Recorded in every checkpoint; defaults to a random id. */
  sessionId?: string;
  /** Receives the one warning when checkpoints are enabled but cannot work. @default process.emitWarning */
  onWarning?: (message: string) => void;
  /** Environment used for the default store folder. @default process.env */
  env?: NodeJS.ProcessEnv;
}

/**
 * Builds the observer a fresh agent should install, from its config: a parsed object with
 * `capabilities.checkpoint`, or TOML text. `enabled = false` (the default) returns `undefined`
 * without touching the file system at all. A store that cannot be opened (unwritable, a symlink,
 * a project at the home folder or `/`) gives one warning and `undefined`: never a throw, never a
 * blocked agent.
 *
 * @throws CheckpointError `INVALID_CONFIG` for a malformed config (before anything is touched).
 * @example
 * const observer = await observerForConfig('[capabilities.checkpoint]\nenabled = true', { projectRoot });
 */
export async function observerForConfig(
  config: { capabilities?: { checkpoint?: CheckpointConfig } } | string,
  options: ObserverForConfigOptions,
): Promise<CheckpointObserver | undefined> {
  const resolved = resolveCheckpointConfig(checkpointTableOf(config));
  if (!resolved.enabled) return undefined;
  const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'TurnbackWarning'));
  if (typeof options.projectRoot !== 'string' || options.projectRoot.length === 0) {
    warn('turnback: checkpoints are off: no project root given');
    return undefined;
  }
  let projectRoot: string;
  try {
    projectRoot = await realpath(options.projectRoot);
  } catch (error) {
    warn(`turnback: checkpoints are off: cannot resolve the project root ${options.projectRoot}: ${(error as Error).message}`);
    return undefined;
  }
  const refusal = await workspaceRefusal(projectRoot);
  if (refusal !== undefined) {
    warn(`turnback: checkpoints are off: ${refusal.detail}`);
    return undefined;
  }
  const dir = resolved.dir ?? defaultStoreDir(projectRoot, options.env);
  try {
    const store = await CheckpointStore.open(dir, { projectRoot });
    return new CheckpointObserver({
      store,
      maxFileBytes: resolved.maxFileMib * 1024 * 1024,
      ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
    });
  } catch (error) {
    warn(`turnback: checkpoints are off: cannot open the store at ${dir}: ${(error as Error).message}`);
    return undefined;
  }
}
