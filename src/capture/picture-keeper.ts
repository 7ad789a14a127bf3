import { loadHasher } from '../core/hash.js';
import type { FileSystem } from '../fs/file-system.js';
import { sharedParallelLstat } from '../fs/parallel-lstat.js';
import { baselineGeneration, parseBaseline } from './baseline.js';
import { IgnoreStack, type ResolvedCoverage } from './coverage.js';
import { copiesStillVouched, pictureChange, takePicture, type Picture, type PictureCache, type PictureRecord, type TakePictureOptions } from './picture.js';
import { deltaAfter, loadPictureCache, pictureDelta, prunePictureBases, savePictureCache, writePictureBase, type PersistedRecords, type PictureBase, type StateDocuments } from './picture-persist.js';
import { ScanMemo } from './scan.js';
import { restoreScanIndex, scanIndexOf } from './scan-index.js';
import { hiddenTrackedAnswer, seedHiddenTracked, type HiddenTrackedAnswer } from './tracked-files.js';
import { pictureStoreOf, type ObjectSink } from './stable-read.js';
import { keepPictures, keptPicturesKey, takeKeptPictures } from './kept-pictures.js';
import { WatchedPictures } from './watched-picture.js';
import { noteWatched, watcherFor } from './watchers.js';

/** What a {@link PictureKeeper} needs from the store. `CheckpointStore` satisfies it. */
export interface PictureKeeperStore extends StateDocuments, ObjectSink {
  /** The store folder: never pictured, even when it sits inside the project. */
  readonly root: string;
  listState(prefix: string): Promise<string[]>;
}

/** Construction options of {@link PictureKeeper}. */
export interface PictureKeeperOptions {
  store: PictureKeeperStore;
  /** The canonical project root. */
  projectRoot: string;
  coverage: ResolvedCoverage;
  fs: FileSystem;
  /** Lists one folder during pictures; for tests only (see {@link TakePictureOptions.readDir}). */
  readDir?: TakePictureOptions['readDir'];
  /** Epoch milliseconds by which every picture ends, when sooner than its own budget. */
  deadline?: number;
  /** The picture-base generations that open calls of this process still name (never pruned). */
  liveGenerations: () => Iterable<string>;
}

/** The stat cache state document. */
const STAT_CACHE = 'stat-cache';
/** The settled folders of the last scan (see scan-index.ts). */
const SCAN_INDEX = 'scan-index';
/**
 * Shortest time between two saves of the scan index while a keeper lives (it is saved again on
 * close): in a session where some folder keeps changing, every picture lists it afresh, and a
 * big tree's index is a few hundred kilobytes.
 */
const SCAN_INDEX_SAVE_EVERY_MS = 5000;
/** A new picture base is written once this many files (or an eighth of the base) differ from it. */
const BASE_REWRITE_MIN = 256;
/**
 * Longest a picture's stat cache waits to be saved. Saving it cost 2–4 ms a picture, a tenth of
 * a call pair; batched, a busy session saves it at most five times a second.
 */
export const CACHE_SAVE_DELAY_MS = 200;
/** Bases younger than this are never removed: another process may be about to name one. */
const BASE_GRACE_MS = 10 * 60 * 1000;

/** How many files a delta holds that differ from its base (see `#baseRewriteDue`), per delta object. */
const driftOf = new WeakMap<PersistedRecords, number>();

/** What identifies a hidden-tracked answer, to tell whether the saved one is current. */
function trackedToken(answer: HiddenTrackedAnswer | undefined): string | undefined {
  return answer === undefined ? undefined : `${answer.index}\u0000${answer.hidden}`;
}

/**
 * The pictures of one observer and what they keep between them: the stat cache (loaded from the
 * store on the first picture, saved soon after each), the picture base the cache and call
 * baselines are persisted against, and the in-memory helpers that make a repeat picture cheap
 * (the ignore stack, the scan memo, the two-thread stat batches).
 */
export class PictureKeeper {
  readonly #options: PictureKeeperOptions;
  readonly #pictureStore: ReturnType<typeof pictureStoreOf>;
  #cache: PictureCache | undefined;
  /** The picture base the stat cache and call baselines are persisted against. */
  #base: PictureBase | undefined;
  /** The records the persisted stat cache describes, to skip saving an unchanged picture. */
  #savedRecords: ReadonlyMap<string, PictureRecord> | undefined;
  /** The newest picture whose stat cache is not saved yet (see {@link CACHE_SAVE_DELAY_MS}). */
  #unsaved: Picture | undefined;
  #saveTimer: NodeJS.Timeout | undefined;
  /** Stat cache saves, one after another. */
  #saving: Promise<void> = Promise.resolve();
  /** The last delta computed, reused while the picture map and the base are the same objects. */
  #lastDelta: { records: ReadonlyMap<string, PictureRecord>; base: PictureBase | undefined; delta: PersistedRecords } | undefined;
  // Replaced only by what a closed keeper of the same project left (see kept-pictures.ts).
  #ignores = new IgnoreStack();
  #memo = new ScanMemo();
  /** The process's helper thread of big repeat pictures, shared by every keeper (see {@link sharedParallelLstat}). */
  readonly #parallel = sharedParallelLstat();
  /** The memo revision the persisted scan index describes, and when it was saved. */
  #scanIndexSaved: { revision: number; at: number; tracked: string | undefined } = { revision: 0, at: 0, tracked: undefined };
  /**
   * The identity of the stat cache document this keeper last read or wrote (`undefined`: there was
   * none; `null`: not known), so close can tell whether the document still is this keeper's.
   */
  #cacheIdentity: string | undefined | null = null;
  /** The tokens of this keeper's pictures, when this process watches the project (see watchers.ts). */
  #watched: WatchedPictures;
  /** True when this keeper's last picture had the process's watcher of the project (a process that lives on). */
  #watchedHere = false;

  constructor(options: PictureKeeperOptions) {
    this.#options = options;
    this.#pictureStore = pictureStoreOf(options.store, options.fs);
    this.#watched = new WatchedPictures(options.projectRoot, options.coverage, [options.store.root]);
  }

  /** How this keeper's pictures used the watcher of its project (see watchers.ts). */
  get watched(): WatchedPictures {
    return this.#watched;
  }

  /** The base pictures are currently persisted against (a call baseline names it). */
  get base(): PictureBase | undefined {
    return this.#base;
  }

  /**
   * Takes a whole-tree picture, reusing `cache` (default: the newest picture, or the stat cache a
   * new process loads from the store) for every file whose stat is unchanged.
   */
  async take(options: Pick<TakePictureOptions, 'signal' | 'onProgress'>, cache?: PictureCache): Promise<Picture> {
    await loadHasher();
    if (this.#cache === undefined && !(await this.#adoptKept())) {
      // Taken before the read: a document replaced in between makes close find a different one.
      this.#cacheIdentity = await this.#identity(STAT_CACHE);
      const loaded = await loadPictureCache(this.#options.store, STAT_CACHE);
      this.#cache = this.cacheOf(loaded.records, await this.#restoreScanIndex(loaded.records));
      this.#base = loaded.base;
      this.#savedRecords = loaded.records;
    }
    const { store, projectRoot, coverage, readDir, deadline } = this.#options;
    // A watcher, where this process keeps one, vouches for what changed since the last picture.
    const watcher = readDir === undefined ? watcherFor(projectRoot) : undefined;
    if (watcher !== undefined) noteWatched(projectRoot, this.#watched);
    this.#watchedHere = watcher !== undefined;
    // The last picture again only while the store still vouches for every copy it names.
    const holds = async (last: Picture): Promise<boolean> => copiesStillVouched(last.records, await this.#pictureStore.checkCopies?.());
    const plan = watcher !== undefined ? await this.#watched.plan(watcher, (cache ?? this.#cache)?.records, holds) : undefined;
    if (plan?.kind === 'same') return plan.picture;
    const changes = plan?.changes;
    const picture = await takePicture({
      store: this.#pictureStore,
      projectRoot,
      coverage,
      ...(deadline !== undefined ? { deadline: Math.min(deadline, Date.now() + coverage.maxPictureSeconds * 1000) } : {}),
      cache: cache ?? this.#cache,
      exclude: [store.root],
      ...(options.signal !== undefined ? { signal: options.signal } : {}),
      ...(options.onProgress !== undefined ? { onProgress: options.onProgress } : {}),
      ...(readDir !== undefined ? { readDir } : {}),
      ...(changes !== undefined ? { changes } : {}),
    });
    if (plan !== undefined) this.#watched.taken(plan, picture);
    this.#cache = this.cacheOf(picture.records, picture.ignoreEpoch);
    this.#unsaved = picture;
    // A new base is written before the picture is used, so the baseline built from it is a small
    // delta; a cache head alone can wait.
    if (picture.records !== this.#savedRecords && this.#baseRewriteDue(this.deltaOf(picture.records))) await this.saveNow();
    else this.#saveSoon();
    return picture;
  }

  /** A picture cache over `records` with this keeper's in-memory helpers. */
  cacheOf(records: ReadonlyMap<string, PictureRecord>, ignoreEpoch: number | undefined): PictureCache {
    return { records, ignores: this.#ignores, memo: this.#memo, parallel: this.#parallel, ...(ignoreEpoch !== undefined ? { ignoreEpoch } : {}) };
  }

  /** What `records` holds beyond the current base; one pass per picture map (a call's begin and the save share it). */
  deltaOf(records: ReadonlyMap<string, PictureRecord>): PersistedRecords {
    const last = this.#lastDelta;
    if (last !== undefined && last.records === records && last.base === this.#base) return last.delta;
    // Consecutive pictures: the last one's delta and what changed since, not a pass over every record.
    const change = pictureChange(records);
    const delta =
      change !== undefined && last !== undefined && last.records === change.from && last.base === this.#base
        ? deltaAfter(last.delta, records, change.paths, this.#base)
        : pictureDelta(records, this.#base);
    this.#lastDelta = { records, base: this.#base, delta };
    return delta;
  }

  /**
   * Saves the newest unsaved stat cache now. Never rejects: the cache only saves re-reading files,
   * so a save that fails is retried by the next one (at the latest on close) and otherwise costs a
   * slower first picture in the next process, never a wrong one.
   */
  saveNow(): Promise<void> {
    if (this.#saveTimer !== undefined) clearTimeout(this.#saveTimer);
    this.#saveTimer = undefined;
    this.#saving = this.#saving.then(async () => {
      const picture = this.#unsaved;
      this.#unsaved = undefined;
      if (picture === undefined) return;
      try {
        await this.#persist(picture);
      } catch {
        this.#unsaved ??= picture;
      }
      await this.#saveScanIndex(false);
    });
    return this.#saving;
  }

  /**
   * Saves what is unsaved (the scan index too), and leaves the pictures to the next keeper of the
   * project in this process. The shared helper thread stays: it holds no process open.
   */
  async close(): Promise<void> {
    await this.saveNow();
    // A process that watches the project lives on (the command server): the next keeper here
    // adopts this memo, so the index waits for its next due save ({@link SCAN_INDEX_SAVE_EVERY_MS})
    // instead of being encoded and written at every event's close (~4 ms at 9,000 files). Another
    // process reading it meanwhile finds an index a few seconds old: it lists again the folders
    // changed since, slower, never wrong (restoreScanIndex), as after a crash.
    await this.#saveScanIndex(!this.#watchedHere);
    await this.#leaveKept();
  }

  /** The identity of state document `name` now; `null` when the store cannot tell. */
  async #identity(name: string): Promise<string | undefined | null> {
    const { store } = this.#options;
    if (store.stateIdentity === undefined) return null;
    try {
      return await store.stateIdentity(name);
    } catch {
      return null;
    }
  }

  #keptKey(): string {
    const { store, projectRoot, coverage } = this.#options;
    return keptPicturesKey(store.root, projectRoot, coverage);
  }

  /**
   * Leaves this keeper's last picture, memo and ignore stack for the next keeper of the project,
   * when the stat cache on disk is the one this keeper read or wrote last and holds that picture.
   */
  async #leaveKept(): Promise<void> {
    const cache = this.#cache;
    if (cache === undefined || this.#unsaved !== undefined || this.#cacheIdentity === null) return;
    const identities = [await this.#identity(STAT_CACHE), await this.#identity(SCAN_INDEX)] as const;
    if (identities[0] === null || identities[1] === null || identities[0] !== this.#cacheIdentity) return;
    keepPictures(this.#keptKey(), {
      identities: [identities[0], identities[1]],
      records: cache.records,
      ignoreEpoch: cache.ignoreEpoch,
      base: this.#base,
      lastDelta: this.#lastDelta,
      memo: this.#memo,
      ignores: this.#ignores,
      scanIndexSaved: this.#scanIndexSaved,
      watched: this.#watched,
    });
  }

  /**
   * Starts from what a closed keeper of the project left, when neither document changed since
   * (no other process pictured the project in between); false when there is nothing to adopt.
   */
  async #adoptKept(): Promise<boolean> {
    const kept = takeKeptPictures(this.#keptKey());
    if (kept === undefined) return false;
    const cacheIdentity = await this.#identity(STAT_CACHE);
    if (cacheIdentity !== kept.identities[0] || (await this.#identity(SCAN_INDEX)) !== kept.identities[1]) return false;
    this.#memo = kept.memo;
    this.#ignores = kept.ignores;
    // The same rules (the key says so) in a new object: the ignore decisions taken still hold.
    this.#ignores.carryOver(this.#options.coverage);
    this.#cache = this.cacheOf(kept.records, kept.ignoreEpoch);
    this.#base = kept.base;
    this.#savedRecords = kept.records;
    this.#lastDelta = kept.lastDelta;
    this.#scanIndexSaved = kept.scanIndexSaved;
    this.#watched = kept.watched;
    this.#cacheIdentity = cacheIdentity;
    return true;
  }

  /**
   * Starts the memo and the ignore stack of a fresh process from the scan index an earlier one
   * saved, bound to the stat cache just loaded; returns the ignore epoch its decisions hold at,
   * or `undefined` when there is no usable index. The helper thread is not started for it: in a
   * fresh process it measured no faster (it boots and warms up while the sweep runs).
   */
  async #restoreScanIndex(records: ReadonlyMap<string, PictureRecord>): Promise<number | undefined> {
    if (records.size === 0) return undefined;
    let doc: unknown;
    try {
      doc = await this.#options.store.readState(SCAN_INDEX);
    } catch {
      return undefined;
    }
    const restored = restoreScanIndex(doc, records);
    if (restored === undefined || restored.folders.size === 0 || !this.#memo.restore(restored.folders, records, restored.scope)) return undefined;
    if (restored.tracked !== undefined) seedHiddenTracked(this.#options.projectRoot, restored.tracked);
    this.#scanIndexSaved = { revision: this.#memo.revision, at: Date.now(), tracked: trackedToken(restored.tracked) };
    return this.#ignores.seed(this.#options.coverage, restored.keys);
  }

  /**
   * Saves the scan index when the memo changed since the last save, at most every
   * {@link SCAN_INDEX_SAVE_EVERY_MS} unless `now`. Never rejects: without it the next process
   * lists every folder, which is slower, never wrong.
   */
  async #saveScanIndex(now: boolean): Promise<void> {
    const revision = this.#memo.revision;
    const tracked = hiddenTrackedAnswer(this.#options.projectRoot);
    const token = trackedToken(tracked);
    if (revision === this.#scanIndexSaved.revision && token === this.#scanIndexSaved.tracked) return;
    if (!now && Date.now() - this.#scanIndexSaved.at < SCAN_INDEX_SAVE_EVERY_MS) return;
    const doc = scanIndexOf(this.#memo, this.#ignores, tracked);
    if (doc === undefined) return;
    try {
      await this.#options.store.writeState(SCAN_INDEX, doc, { durable: false });
      this.#scanIndexSaved = { revision, at: Date.now(), tracked: token };
    } catch {
      // Tried again on the next save.
    }
  }

  /**
   * Saves the stat cache of the newest picture within {@link CACHE_SAVE_DELAY_MS} (or at turn end
   * or close), not before returning it: a call pair takes two pictures back to back, and a new
   * process only needs a recent cache, not the latest one (files changed since are re-read).
   */
  #saveSoon(): void {
    if (this.#saveTimer !== undefined) return;
    this.#saveTimer = setTimeout(() => void this.saveNow(), CACHE_SAVE_DELAY_MS);
    this.#saveTimer.unref();
  }

  /**
   * Persists the stat cache after a picture, costing what changed rather than what exists: an
   * unchanged picture writes nothing; a few changed files rewrite only the small cache head (a
   * reference to the current base plus the records that differ from it); once the difference
   * grows past an eighth of the base (at least 256 files), a new base is written in chunks and
   * bases nothing refers to any more are removed.
   */
  async #persist(picture: Picture): Promise<void> {
    const saved = this.#savedRecords;
    if (saved === picture.records) return;
    const change = pictureChange(picture.records);
    if (change !== undefined && change.from === saved) {
      // Only the changed paths can differ from what was saved.
      if (change.paths.every((p) => picture.records.get(p) === saved.get(p))) {
        this.#savedRecords = picture.records;
        return;
      }
    } else if (saved !== undefined && saved.size === picture.records.size) {
      let same = true;
      for (const [path, record] of picture.records) {
        if (saved.get(path) !== record) {
          same = false;
          break;
        }
      }
      if (same) return;
    }
    const { store } = this.#options;
    const delta = this.deltaOf(picture.records);
    // Unknown while the write is under way: a failed one leaves a document this keeper cannot vouch for.
    this.#cacheIdentity = null;
    if (this.#baseRewriteDue(delta)) {
      this.#base = await writePictureBase(store, picture.records);
      await savePictureCache(store, STAT_CACHE, picture, this.#base, this.deltaOf(picture.records));
      this.#cacheIdentity = await this.#identity(STAT_CACHE);
      await this.#pruneBases();
    } else {
      await savePictureCache(store, STAT_CACHE, picture, this.#base, delta);
      this.#cacheIdentity = await this.#identity(STAT_CACHE);
    }
    this.#savedRecords = picture.records;
  }

  /** True once `delta` (against the current base) has grown past an eighth of it, and 256 files. */
  #baseRewriteDue(delta: PersistedRecords): boolean {
    // Counted once per delta: every picture asks, and an unchanged picture's delta is the same object.
    let drift = driftOf.get(delta);
    if (drift === undefined) {
      drift = delta.removed.length;
      for (const record of delta.records) if (record.type === 'file' && record.state.type === 'file') drift++;
      driftOf.set(delta, drift);
    }
    return drift > Math.max(BASE_REWRITE_MIN, (this.#base?.ref.count ?? 0) / 8);
  }

  /** Removes picture bases that neither the cache nor any call baseline (here or on disk) names. */
  async #pruneBases(): Promise<void> {
    const { store, liveGenerations } = this.#options;
    const keep = new Set<string>(liveGenerations());
    if (this.#base !== undefined) keep.add(this.#base.ref.generation);
    try {
      const head = (await store.readState(STAT_CACHE).catch(() => undefined)) as { base?: { generation?: unknown } } | null | undefined;
      if (typeof head?.base?.generation === 'string') keep.add(head.base.generation);
      for (const name of await store.listState('call-')) {
        const baseline = parseBaseline(await store.readState(name).catch(() => undefined));
        const generation = baseline === undefined ? undefined : baselineGeneration(baseline);
        if (generation !== undefined) keep.add(generation);
      }
    } catch {
      return; // Unsure what is referenced: keep everything.
    }
    await prunePictureBases(store, keep, BASE_GRACE_MS);
  }
}
