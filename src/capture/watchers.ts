import type { NotVouchedReason, TreeWatcher, WatcherStatus } from '../fs/tree-watcher.js';
import type { WatchedPictures } from './watched-picture.js';

// The watchers of this process, one per project root, and what `turnback status` says about
// them. Nothing is watched unless a process asks for it with {@link useWatchers}: the command
// server does (it lives long enough to repay a watch), a command run in its own process does not,
// so its pictures are full sweeps as before. A watcher is started in the background by the first
// picture of its project and used from the first picture after it is ready; until then, and
// whenever it cannot vouch, pictures sweep the whole tree.

/** Starts a watcher of `root`, or says why none can watch it. */
export type WatcherFactory = (root: string) => Promise<TreeWatcher | { refused: true; reason: NotVouchedReason | 'not-installed'; detail: string }>;

/** A disagreement the verification sweep found: a path whose change the watcher did not report. */
export interface WatchDisagreement {
  path: string;
  /** Epoch milliseconds of the sweep that found it. */
  at: number;
}

/** What a person is told about the watcher of one project. */
export type WatchReport =
  | { state: 'off'; detail: string }
  | { state: 'starting'; detail: string }
  | (WatcherStatus & { verified: number; disagreements: number; lastDisagreement?: WatchDisagreement });

interface Entry {
  watcher?: TreeWatcher;
  /** The tokens of the last keeper that pictured the project with the watcher (what verification checks). */
  watched?: WatchedPictures;
  refused?: { reason: NotVouchedReason | 'not-installed'; detail: string };
  starting?: Promise<void>;
  verified: number;
  disagreements: number;
  lastDisagreement?: WatchDisagreement;
}

let factory: WatcherFactory | undefined;
/** By root, the least recently pictured first. */
const entries = new Map<string, Entry>();
/**
 * Projects watched at once: each costs the watch service an inotify instance (128 per user by
 * default) and its watches; the least recently pictured project past this stops being watched.
 */
const MAX_WATCHED = 8;

/** Where a process that does not watch tells of the projects it pictures (see {@link hintWatchers}). */
let hint: ((root: string) => void) | undefined;
const hinted = new Set<string>();

/**
 * In a process that does not watch: `tell` is called once per project root this process pictures
 * (a command in its own process tells the server it started, src/server/watch-hint.ts).
 */
export function hintWatchers(tell: ((root: string) => void) | undefined): void {
  hint = tell;
  hinted.clear();
}

/** True while this process watches the projects it pictures ({@link useWatchers} was given a factory). */
export function watchersInUse(): boolean {
  return factory !== undefined;
}

/** Makes this process watch the projects it pictures, with watchers from `make`; `undefined` stops and forgets every watcher. */
export async function useWatchers(make: WatcherFactory | undefined): Promise<void> {
  factory = make;
  if (make === undefined) await closeWatchers();
}

/** Stops every watcher of this process (a server that leaves). */
export async function closeWatchers(): Promise<void> {
  const all = [...entries.values()];
  entries.clear();
  await Promise.all(all.map(async (entry) => {
    await entry.starting;
    await entry.watcher?.close();
  }));
}

/**
 * The ready watcher of `root`, or `undefined` (none asked for, still starting, or refused).
 * The first call for a root starts one in the background.
 */
export function watcherFor(root: string): TreeWatcher | undefined {
  if (factory === undefined) {
    if (hint !== undefined && !hinted.has(root)) {
      hinted.add(root);
      hint(root);
    }
    return undefined;
  }
  let entry = entries.get(root);
  if (entry !== undefined) {
    entries.delete(root);
    entries.set(root, entry);
  } else {
    const started: Entry = { verified: 0, disagreements: 0 };
    entry = started;
    entries.set(root, started);
    const make = factory;
    started.starting = make(root)
      .then((made) => {
        if ('refused' in made) started.refused = { reason: made.reason, detail: made.detail };
        else if (entries.get(root) === started) started.watcher = made;
        else void made.close();
      })
      .catch((error: unknown) => {
        started.refused = { reason: 'stopped', detail: error instanceof Error ? error.message : String(error) };
      })
      .finally(() => {
        started.starting = undefined;
      });
    for (const old of entries.keys()) {
      if (entries.size <= MAX_WATCHED) break;
      void forgetWatcher(old);
    }
  }
  return entry.watcher;
}

/** Stops watching `root` (its watcher closed, its counts forgotten). */
export async function forgetWatcher(root: string): Promise<void> {
  const entry = entries.get(root);
  if (entry === undefined) return;
  entries.delete(root);
  await entry.starting;
  await entry.watcher?.close();
}

/** Resolves once the watcher of `root` asked for is started or refused (tests and the benchmark wait on it). */
export async function watcherReady(root: string): Promise<TreeWatcher | undefined> {
  watcherFor(root);
  await entries.get(root)?.starting;
  return entries.get(root)?.watcher;
}

/** Notes the keeper state whose pictures the watcher of `root` answers (for {@link watchedProjects}). */
export function noteWatched(root: string, watched: WatchedPictures): void {
  const entry = entries.get(root);
  if (entry !== undefined) entry.watched = watched;
}

/** Every project with a ready watcher and a keeper that pictured it through it. */
export function watchedProjects(): { watcher: TreeWatcher; watched: WatchedPictures }[] {
  const out: { watcher: TreeWatcher; watched: WatchedPictures }[] = [];
  for (const entry of entries.values()) if (entry.watcher !== undefined && entry.watched !== undefined) out.push({ watcher: entry.watcher, watched: entry.watched });
  return out;
}

/** Counts one verification sweep of `root` and the paths it found the watcher did not report. */
export function noteVerification(root: string, missed: readonly string[], at: number = Date.now()): void {
  const entry = entries.get(root);
  if (entry === undefined) return;
  entry.verified += 1;
  if (missed.length === 0) return;
  entry.disagreements += missed.length;
  entry.lastDisagreement = { path: missed[0] as string, at };
}

/** What `turnback status` says about the watcher of `root` in this process. */
export function watchReport(root: string): WatchReport {
  if (factory === undefined) return { state: 'off', detail: 'this process does not watch (only the command server does)' };
  const entry = entries.get(root);
  if (entry === undefined || entry.starting !== undefined) return { state: 'starting', detail: 'the watcher is starting: pictures sweep the whole tree until it is ready' };
  if (entry.watcher === undefined) {
    const refused = entry.refused ?? { reason: 'stopped' as const, detail: 'no watcher' };
    return refused.reason === 'not-installed' ? { state: 'off', detail: refused.detail } : { state: 'not-vouching', reason: refused.reason, detail: refused.detail, backend: 'none', verified: entry.verified, disagreements: entry.disagreements };
  }
  return {
    ...entry.watcher.status(),
    verified: entry.verified,
    disagreements: entry.disagreements,
    ...(entry.lastDisagreement !== undefined ? { lastDisagreement: entry.lastDisagreement } : {}),
  };
}
