import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { STAT_FIELDS, lstatInto } from './stat-batch.js';

/**
 * Fewest paths a batch must hold before part of it goes to the helper thread: below this the
 * message round trip costs about what it saves.
 */
export const PARALLEL_MIN_PATHS = 2048;

/**
 * Most paths the helper takes part in at once. A window holds its paths' texts and stats on both
 * threads (about 200 bytes a path, plus about 10 MB for the thread itself): four pictures of a
 * 100,000-file tree in one window peaked at 206–226 MB with the helper against 180–190 MB
 * without, over the 200 MB such a picture may use. A bigger batch goes window after window
 * ({@link ParallelLstat.lstatAll}), so what it holds beyond its answer (40 bytes a path) stays
 * that of one window: a 250,000-file sweep is then two-threaded too (issue #28).
 */
export const PARALLEL_MAX_PATHS = 50_000;

/**
 * Repeat scans of a big tree after which the helper starts (see
 * {@link ParallelLstat.noteRepeatScan}): a session that pictures the tree again and again gains
 * from it; a one-off pair of pictures (`turnback run`) would only pay its start.
 */
export const WARM_AFTER_REPEAT_SCANS = 2;

// A batch past one window lets the helper go once it is answered (`#letGo`), and the next batch
// that would use it starts it again: a tree that big is swept whole only now and then once the
// watcher answers (a first picture, an idle verification sweep), and the thread's heap — its
// isolate and what the last windows left in it, about 20 MiB at 250,000 files — would otherwise
// sit beside the picture's own peak, which comes right after the sweep as the picture is
// persisted (issue #28: the server's RSS at 250,000 files). A restart costs a thread's boot,
// which overlaps the first window, stated on this thread.

/** A batch's paths joined by `\0`; `offsets[i]` is where path `i` starts in `text`. */
interface JoinedPaths {
  rels: readonly string[];
  text: string;
  offsets: Uint32Array;
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

interface PendingBatch {
  resolve: (out: Float64Array) => void;
  reject: (error: Error) => void;
}

/**
 * `lstat` of many paths at once on two threads: the calling thread takes one part while a helper
 * thread takes the rest. A picture is mostly `lstat` calls (about 5 µs each in Node, most of it
 * in the kernel), and a second core halves that part, as git's preloaded index does with threads.
 *
 * The helper starts on {@link ParallelLstat.warm} and is unreferenced while idle, so it never
 * keeps a process alive; a batch past one window lets it go when answered, and the next batch
 * starts it again. Until it is ready, after it fails, or after {@link ParallelLstat.close},
 * every batch runs on the calling thread: the helper changes only the speed, never the result.
 */
export class ParallelLstat {
  #worker: Worker | undefined;
  #ready = false;
  #closed = false;
  /** The helper was let go after a big batch (see `#letGo`); the next batch that would use it starts it again. */
  #dormant = false;
  /** The end of the helper last let go. */
  #stopping: Promise<void> = Promise.resolve();
  #pending: PendingBatch | undefined;
  #repeatScans = 0;
  /** The last batch's paths as one text (see `#joinedFor`). */
  #joined: JoinedPaths | undefined;
  /** Share of a batch given to the helper, tuned from the last batch's timings. */
  #helperShare = 0.5;

  readonly #helperUrl: URL | undefined;
  readonly #windowPaths: number;
  #settled: Promise<boolean> | undefined;

  /**
   * @param options.helperUrl The helper thread's program; for tests (a helper that fails). By
   *   default the built `lstat-worker.js` of this package (see {@link defaultHelperUrl}).
   * @param options.windowPaths Most paths of one window (see {@link PARALLEL_MAX_PATHS}, the
   *   default); for tests, which reach several windows with a small tree.
   */
  constructor(options: { helperUrl?: URL; windowPaths?: number } = {}) {
    this.#helperUrl = options.helperUrl ?? defaultHelperUrl();
    this.#windowPaths = Math.max(PARALLEL_MIN_PATHS, options.windowPaths ?? PARALLEL_MAX_PATHS);
  }

  /** Fewest paths for which a batch beats one `lstat` at a time as a walk goes. */
  get minBatchPaths(): number {
    return PARALLEL_MIN_PATHS;
  }

  /**
   * True when a batch may use the helper thread: it is running, or it was let go after a batch
   * past one window and the next batch starts it again.
   */
  get parallel(): boolean {
    return !this.#closed && (this.#ready || this.#dormant);
  }

  /** True while the helper thread runs and takes part in batches. */
  get #helping(): boolean {
    return this.#ready && !this.#closed;
  }

  /**
   * Counts a repeat scan of a big tree and starts the helper at the
   * {@link WARM_AFTER_REPEAT_SCANS}th. The thread costs about 10 MB and up to a quarter of a
   * second of CPU to start, which a session repays within a few pictures.
   */
  noteRepeatScan(): void {
    this.#repeatScans += 1;
    // A helper let go after a big batch starts with the next batch, not now: the picture that
    // counted this scan is about to be persisted, its peak.
    if (this.#repeatScans >= WARM_AFTER_REPEAT_SCANS && !this.#dormant) this.warm();
  }

  /** Starts the helper thread if it is not running; returns at once. */
  warm(): void {
    if (this.#worker !== undefined || this.#closed) return;
    this.#dormant = false;
    if (this.#helperUrl === undefined) {
      this.#closed = true; // no built helper (running from sources): every batch stays here
      return;
    }
    let worker: Worker;
    try {
      // A small young generation: the thread holds one batch's strings at a time, and the default
      // sizing let a 100,000-path batch grow its heap by tens of megabytes.
      worker = new Worker(this.#helperUrl, {
        stdout: false,
        stderr: false,
        resourceLimits: { maxYoungGenerationSizeMb: 4 },
      });
    } catch {
      this.#closed = true; // no threads here: every batch stays on the calling thread
      return;
    }
    this.#worker = worker;
    worker.unref();
    let settle: (parallel: boolean) => void = () => undefined;
    this.#settled = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    worker.once('online', () => {
      settle(true);
      this.#ready = true;
      // Node refs the worker's port again as it comes online: unreferenced before that, an idle
      // helper that never got a batch would hold the process open.
      worker.unref();
    });
    worker.on('message', (out: Float64Array) => {
      const pending = this.#pending;
      this.#pending = undefined;
      worker.unref();
      pending?.resolve(out);
    });
    const fail = (error: Error): void => {
      settle(false);
      this.#ready = false;
      this.#closed = true;
      this.#dormant = false;
      this.#worker = undefined;
      const pending = this.#pending;
      this.#pending = undefined;
      pending?.reject(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the stat helper thread exited (${code})`)));
  }

  /**
   * Settles once a helper started by {@link warm} is online (`true`) or has failed (`false`);
   * `false` when none was started, and once a helper let go after a big batch has stopped. For
   * callers that want the second thread before a batch.
   */
  ready(): Promise<boolean> {
    if (this.#dormant) return this.#stopping.then(() => false);
    return this.#settled ?? Promise.resolve(false);
  }

  /**
   * `lstat` of `base/rels[i]` for every `i` (`''` is `base` itself) into a new array of {@link STAT_FIELDS} numbers per path (see the `KIND_*` codes).
   * Paths go to the helper relative, so no absolute path is built for its part. A batch past one
   * window ({@link PARALLEL_MAX_PATHS}) goes window after window, each split between the threads.
   * Never rejects: a part the helper cannot finish is done on this thread.
   */
  async lstatAll(base: string, rels: readonly string[]): Promise<Float64Array> {
    const paths = rels;
    const out = new Float64Array(paths.length * STAT_FIELDS);
    const big = paths.length > this.#windowPaths;
    if (this.#dormant && paths.length >= PARALLEL_MIN_PATHS) this.warm();
    if (!big) {
      // One window: a helper still booting (started again just now) is not waited for.
      if (!this.#helping || this.#worker === undefined || this.#pending !== undefined || paths.length < PARALLEL_MIN_PATHS) lstatInto(base, paths, 0, paths.length, out);
      else await this.#window(base, paths, 0, paths.length, out, this.#joinedFor(paths));
      return out;
    }
    // Windows of equal size (none smaller than the batch minimum), never joined into one text.
    const windows = Math.ceil(paths.length / this.#windowPaths);
    const size = Math.ceil(paths.length / windows);
    for (let from = 0; from < paths.length; from += size) {
      await this.#window(base, paths, from, Math.min(paths.length, from + size), out, undefined);
      // A helper booting (it was let go after the last big batch) came up while this thread
      // stated the first window: its online event is handled here, before the next window.
      if (from === 0 && this.#worker !== undefined && !this.#ready) await this.ready();
    }
    this.#letGo();
    return out;
  }

  /**
   * Stops the helper thread after a batch past one window, keeping it ready to start again for
   * the next batch (see the comment at {@link WARM_AFTER_REPEAT_SCANS}). Its handlers go first:
   * its exit is not a failure.
   */
  #letGo(): void {
    const worker = this.#worker;
    if (worker === undefined || this.#closed || this.#pending !== undefined) return;
    worker.removeAllListeners();
    worker.on('error', () => undefined);
    this.#worker = undefined;
    this.#ready = false;
    this.#settled = undefined;
    this.#joined = undefined;
    this.#dormant = true;
    // Its end is not waited for here (see `ready`); a thread that fails to stop is one the process no longer uses.
    this.#stopping = worker.terminate().then(
      () => undefined,
      () => undefined,
    );
  }

  /** True while the helper thread is stopped after a big batch and starts again on the next one (for tests). */
  get dormant(): boolean {
    return this.#dormant && !this.#closed;
  }

  /**
   * One window `[from, to)` of a batch: the helper takes its share from the end while this thread
   * stats the start. `joined`: the whole batch's text when the batch is one window (kept for the
   * next batch); otherwise only the helper's share is joined, and kept nowhere.
   */
  async #window(base: string, paths: readonly string[], from: number, to: number, out: Float64Array, joined: JoinedPaths | undefined): Promise<void> {
    const worker = this.#worker;
    if (!this.#helping || worker === undefined || this.#pending !== undefined) {
      lstatInto(base, paths, from, to, out);
      return;
    }
    const started = performance.now();
    const count = to - from;
    const split = from + Math.max(1, Math.min(count - 1, Math.round(count * (1 - this.#helperShare))));
    const helped = new Promise<Float64Array>((resolve, reject) => {
      this.#pending = { resolve, reject };
    });
    const text = joined !== undefined ? joined.text.slice(joined.offsets[split]) : paths.slice(split, to).join('\0');
    worker.ref();
    worker.postMessage({ base, text, count: to - split });
    lstatInto(base, paths, from, split, out);
    const mainMs = performance.now() - started;
    let tail: Float64Array;
    try {
      tail = await helped;
    } catch {
      lstatInto(base, paths, split, to, out);
      return;
    }
    const resolvedMs = performance.now() - started;
    const helperPaths = to - split;
    if (tail.length !== helperPaths * STAT_FIELDS + 1) {
      lstatInto(base, paths, split, to, out);
      return;
    }
    out.set(tail.subarray(0, helperPaths * STAT_FIELDS), split * STAT_FIELDS);
    // Waited for: the helper's whole round trip was the slower side. Else only its own time is known.
    const helperMs = resolvedMs > mainMs + 1 ? resolvedMs : (tail[tail.length - 1] as number);
    this.#retune(split - from, helperPaths, mainMs, helperMs);
  }

  /**
   * `rels` as one `\0`-joined text, with where each path starts. Kept for the next batch: a repeat
   * scan of an unchanged tree asks for the same paths in the same order, and comparing them costs
   * a tenth of joining them again (which took ~2.5 ms a batch of 10,000 paths).
   */
  #joinedFor(rels: readonly string[]): JoinedPaths {
    const last = this.#joined;
    if (last !== undefined && sameStrings(last.rels, rels)) return last;
    const offsets = new Uint32Array(rels.length + 1);
    let at = 0;
    for (let i = 0; i < rels.length; i++) {
      offsets[i] = at;
      at += (rels[i] as string).length + 1;
    }
    offsets[rels.length] = at;
    // A copy: the caller may reuse its array.
    const joined: JoinedPaths = { rels: rels.slice(), text: rels.join('\0'), offsets };
    this.#joined = joined;
    return joined;
  }

  /** Moves the split toward equal finishing times (rates per path on each side). */
  #retune(mainPaths: number, helperPaths: number, mainMs: number, helperMs: number): void {
    if (mainMs <= 0 || helperMs <= 0) return;
    const mainRate = mainPaths / mainMs;
    const helperRate = helperPaths / helperMs;
    const ideal = helperRate / (mainRate + helperRate);
    // Smoothed and bounded: one slow batch (a descheduled thread) must not swing the next.
    this.#helperShare = Math.min(0.7, Math.max(0.2, this.#helperShare * 0.5 + ideal * 0.5));
  }

  /** Stops the helper thread; later batches run on the calling thread. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#dormant = false;
    this.#ready = false;
    this.#joined = undefined;
    const worker = this.#worker;
    this.#worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }
}

let shared: ParallelLstat | undefined;

/**
 * The one stat helper of this process, shared by every picture keeper. A process that pictures
 * big trees again and again — an agent framework, the command server serving one command after
 * another with a new observer each time — warms one thread once, instead of one per observer
 * that each must see repeat scans before it starts. Never closed: while idle it is unreferenced
 * and holds no process open; one batch runs at a time, and a second keeper's batch meanwhile runs
 * on its own thread, as it would without a helper.
 */
export function sharedParallelLstat(): ParallelLstat {
  shared ??= new ParallelLstat();
  return shared;
}

/**
 * Starts this process's stat helper thread now, instead of after repeat pictures of a big tree:
 * for a long-lived process whose every picture is the first of its observer — the command
 * server, where each agent hook event opens one — and which would otherwise never see a repeat.
 * Costs about 10 MB; an idle helper holds no process open.
 */
export function warmStatHelper(): void {
  sharedParallelLstat().warm();
}

/**
 * The built helper program: `lstat-worker.js` beside the built library (`dist/`, also from
 * `dist/cli/`), or, when running from sources (the tests), the one in `dist/` of this checkout.
 * `undefined` when there is none: pictures then stat on the calling thread only, with the same results.
 */
export function defaultHelperUrl(): URL | undefined {
  for (const candidate of ['./lstat-worker.js', '../lstat-worker.js', '../../dist/lstat-worker.js']) {
    const url = new URL(candidate, import.meta.url);
    if (existsSync(url)) return url;
  }
  return undefined;
}
