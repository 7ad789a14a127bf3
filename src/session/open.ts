import { realpath } from 'node:fs/promises';
import { homeFolder } from '../core/home.js';
import { workspaceRefusal } from '../capture/coverage.js';
import { CheckpointStore } from '../store/store.js';
import { checkpointTableOf, defaultStoreDir, resolveCheckpointConfig, type CheckpointConfig, type ResolvedCheckpointConfig } from './config.js';
import { CheckpointObserver } from './observer.js';
import { observerOptionsFromConfig } from './options.js';
import { UnavailableCheckpoints, type UnavailableReason } from './unavailable.js';

/** Options of {@link observerForConfig} and {@link openCheckpoints}. */
export interface ObserverForConfigOptions {
  /** The project the agent works in. */
  projectRoot: string;
  /** Recorded in every checkpoint; defaults to a random id. */
  sessionId?: string;
  /** Receives the one warning when checkpoints are enabled but cannot work ({@link observerForConfig} only). @default process.emitWarning */
  onWarning?: (message: string) => void;
  /** Environment used for the default store folder (`XDG_DATA_HOME`) and the home folder (`HOME`). @default process.env */
  env?: NodeJS.ProcessEnv;
}

/** The whole config, as {@link observerForConfig} and {@link openCheckpoints} accept it. */
export type CheckpointConfigInput = { capabilities?: { checkpoint?: CheckpointConfig } } | string;

/** A working observer, or why there is none. */
type Opened = { observer: CheckpointObserver } | { reason: UnavailableReason; detail: string };

const REFUSAL_REASON = { home: 'home-folder', root: 'filesystem-root', 'not-a-directory': 'not-a-directory' } as const;

/**
 * The one path both entry points share. Disabled returns before any file-system call; every
 * other refusal is decided before the store folder is created.
 */
async function open(resolved: ResolvedCheckpointConfig, options: ObserverForConfigOptions): Promise<Opened> {
  if (!resolved.enabled) {
    return { reason: 'disabled', detail: 'checkpoints are off: enabled is not true in [capabilities.checkpoint]' };
  }
  if (typeof options.projectRoot !== 'string' || options.projectRoot.length === 0) {
    return { reason: 'no-project-root', detail: 'checkpoints are off: no project root given' };
  }
  let projectRoot: string;
  try {
    projectRoot = await realpath(options.projectRoot);
  } catch (error) {
    return { reason: 'not-a-directory', detail: `checkpoints are off: cannot resolve the project root ${options.projectRoot}: ${(error as Error).message}` };
  }
  const refusal = workspaceRefusal(projectRoot, homeFolder(options.env));
  if (refusal !== undefined) return { reason: REFUSAL_REASON[refusal.reason], detail: `checkpoints are off: ${refusal.detail}` };
  const dir = resolved.dir ?? defaultStoreDir(projectRoot, options.env);
  try {
    const store = await CheckpointStore.open(dir, { projectRoot });
    try {
      await store.probeWritable();
    } catch (error) {
      await store.close().catch(() => undefined);
      throw error;
    }
    return {
      observer: new CheckpointObserver({
        store,
        // The config's picture limits and skip list apply to library sessions as they do to the CLI.
        ...observerOptionsFromConfig(resolved),
        ...(options.sessionId !== undefined ? { sessionId: options.sessionId } : {}),
      }),
    };
  } catch (error) {
    return { reason: 'store-unavailable', detail: `checkpoints are off: cannot open the store at ${dir}: ${(error as Error).message}` };
  }
}

/**
 * Builds the observer a fresh agent should install, from its config: a parsed object with
 * `capabilities.checkpoint`, or TOML text. `enabled = false` (the default) returns `undefined`
 * without touching the file system at all. A store that cannot be opened (unwritable, a symlink,
 * a project at the home folder or `/`) gives one warning and `undefined`: never a throw, never a
 * blocked agent. Surfaces that want a reason on every call use {@link openCheckpoints} instead.
 *
 * @throws CheckpointError `INVALID_CONFIG` for a malformed config (before anything is touched).
 * @example
 * const observer = await observerForConfig('[capabilities.checkpoint]\nenabled = true', { projectRoot });
 */
export async function observerForConfig(config: CheckpointConfigInput, options: ObserverForConfigOptions): Promise<CheckpointObserver | undefined> {
  const resolved = resolveCheckpointConfig(checkpointTableOf(config));
  const opened = await open(resolved, options);
  if ('observer' in opened) return opened.observer;
  if (opened.reason !== 'disabled') {
    const warn = options.onWarning ?? ((message: string) => process.emitWarning(message, 'TurnbackWarning'));
    warn(`turnback: ${opened.detail}`);
  }
  return undefined;
}

/**
 * Like {@link observerForConfig}, for surfaces that want one object whatever happens: a working
 * {@link CheckpointObserver}, or an {@link UnavailableCheckpoints} whose every method resolves to
 * `{ available: false, reason, detail }` — never an empty success — and touches nothing.
 * Disabled (the default) makes no file-system call at all. No warning is emitted: the reason
 * travels with every answer. Tell the two apart with {@link isUnavailable}.
 *
 * @throws CheckpointError `INVALID_CONFIG` for a malformed config (before anything is touched).
 * @example
 * const checkpoints = await openCheckpoints(configToml, { projectRoot, sessionId });
 * const turn = await checkpoints.beginTurn({ label: 'fix the parser' });
 * if (isUnavailable(turn)) ui.note(`no checkpoints: ${turn.detail}`);
 */
export async function openCheckpoints(config: CheckpointConfigInput, options: ObserverForConfigOptions): Promise<CheckpointObserver | UnavailableCheckpoints> {
  const resolved = resolveCheckpointConfig(checkpointTableOf(config));
  const opened = await open(resolved, options);
  return 'observer' in opened ? opened.observer : new UnavailableCheckpoints(opened.reason, opened.detail);
}
