import { openStore } from '../admin.js';
import type { GitCopiesMark } from '../store/git-copies.js';
import type { IdleCopyLook, IdleCopyState } from './frames.js';
import type { ServerLife } from './life.js';
import { withEnvironment } from './request-env.js';

// The server's idle work for the projects it served (issue #28): copying into each store the git
// blobs its checkpoints and pictures rest on (clean tracked files past the copy budget), so their
// pre-images outlive a history rewrite and a `git gc` — never inside an agent's tool call. It
// runs only while no command is served, in slices of the store's (`copyGitBlobsIn`: a few dozen
// blobs read, then a turn of the event loop; the store lock only for naming a batch's copies), and
// stops at the first slice's end after a command arrives; the next idle moment takes it up where
// it stopped (the stopped look's list of blobs it did not reach), not by reading every document of
// the store again: that read (about a second at 250,000 files) stops between two documents when a
// command arrives, but what it read is lost, and between an agent's hook events every idle gap
// would pay it once more.

/** A project a served command took a picture of: its store, and the environment its git ran with. */
interface Served {
  storeRoot: string;
  projectRoot: string;
  env: Record<string, string>;
}

/** Set while the server's service runs: without it (a command in the person's own process) nothing is noted. */
let noteServed: ((served: Served) => void) | undefined;

/**
 * Notes, inside a served command, that it took pictures of `projectRoot` into the store at
 * `storeRoot` (with checkpoints on): the server copies that store's resting blobs in once idle.
 * Does nothing outside the server.
 */
export function servedProject(storeRoot: string, projectRoot: string): void {
  // The request's environment (PATH and GIT_* choose the git that reads the blobs), copied now: the work runs after the request.
  noteServed?.({ storeRoot, projectRoot, env: { ...(process.env as Record<string, string>) } });
}

/**
 * How long a store whose last copy-in left nothing to copy is not looked at again. Finding what is
 * left reads every document and checkpoint of the store (about a second at 250,000 files), and
 * every served command notes its store: without this window each idle moment paid that whole look
 * again, and a command arriving during it waited. New resting blobs (a first picture past the
 * budget, a checkout of another branch) rest on git meanwhile, as they did before any copy-in.
 */
export const IDLE_COPY_RESCAN_MS: number = 10 * 60_000;

/** Blobs a slice reads before the copier looks whether a command arrived: one that does waits for at most that many reads (and the batch's last write). */
const SLICE_FILES = 32;

/**
 * The idle copier as one of the server's services: started with the server's life, it copies each
 * served project's resting blobs in whenever the server goes idle, and stops with the server.
 */
export function startIdleCopies(life: ServerLife, rescanMs: number = IDLE_COPY_RESCAN_MS): { close(): Promise<void>; readonly looks: number; readonly scans: number; state(): IdleCopyState } {
  const pending = new Map<string, Served>();
  // Stores whose last look found nothing left to copy, and when.
  const settledAt = new Map<string, number>();
  // What a stopped look did not reach, by store: the next idle moment takes it up there rather than
  // reading every document again (the costly part of a look, lost when a command stops it).
  // `noted`: a command noted the store after its list was made (its pictures may rest on blobs the list never had).
  // `mark`: how far that look had read the store's index of copies (the next reads only what was appended since).
  const unfinished = new Map<string, { rest: string[]; mark: GitCopiesMark | undefined; noted: boolean }>();
  // The look running now, by store: a command that notes the store while it runs marks it here,
  // since its entry left `unfinished` when the look began (a note then was lost: the look ran out
  // on its old list, and the new pictures' blobs waited for the next rescan).
  const looking = new Map<string, { noted: boolean }>();
  let looks = 0;
  let scans = 0;
  let copied = 0;
  let bytes = 0;
  let lastLook: IdleCopyLook | null = null;
  let running: Promise<void> | undefined;
  let closed = false;
  const busy = (): boolean => closed || life.left || life.active > 0;
  const run = async (): Promise<void> => {
    while (!busy()) {
      const next = pending.values().next();
      if (next.done === true) return;
      const served = next.value;
      // The store's note stays for another look: it stopped, or it must be read afresh.
      let stopped = false;
      try {
        stopped = await withEnvironment(served.env, async () => {
          const store = await openStore(served.storeRoot, { projectRoot: served.projectRoot });
          try {
            looks += 1;
            const carried = unfinished.get(served.storeRoot);
            unfinished.delete(served.storeRoot);
            if (carried === undefined) scans += 1;
            const look = { noted: carried?.noted === true };
            looking.set(served.storeRoot, look);
            let report: Awaited<ReturnType<typeof store.copyGitBlobsIn>>;
            try {
              report = await store.copyGitBlobsIn({ sliceFiles: SLICE_FILES, shouldStop: busy, stopWhileReading: true, wanted: carried?.rest, wantedSince: carried?.mark });
            } finally {
              looking.delete(served.storeRoot);
            }
            copied += report.copied;
            bytes += report.bytes;
            // A look stopped before it knew what is left has no count to show: the last one that had stays.
            if (!report.stopped || report.rest !== undefined) lastLook = { at: new Date().toISOString(), storeRoot: served.storeRoot, copied: report.copied, bytes: report.bytes, left: report.left, lost: report.lost, stopped: report.stopped };
            const noted = look.noted;
            if (report.stopped && report.rest !== undefined) unfinished.set(served.storeRoot, { rest: report.rest, mark: report.mark, noted });
            // What git lost can never be copied: it does not keep the store waiting for another look.
            if (!report.stopped && report.left === report.lost && !noted) settledAt.set(served.storeRoot, Date.now());
            else settledAt.delete(served.storeRoot);
            // A resumed list ran out, but a command noted the store after the list was made: the
            // store's note stays, and the next look reads it afresh.
            return report.stopped || noted;
          } finally {
            await store.close();
          }
        });
      } catch (error) {
        unfinished.delete(served.storeRoot);
        // A store that cannot be opened or written now: its next served command notes it again.
        lastLook = { at: new Date().toISOString(), storeRoot: served.storeRoot, copied: 0, bytes: 0, left: 0, lost: 0, stopped: false, failed: error instanceof Error ? error.message : String(error) };
      }
      // A note taken while the copy ran (a command came and went between two slices) stays for the next idle moment.
      if (!stopped && pending.get(served.storeRoot) === served) pending.delete(served.storeRoot);
    }
  };
  const kick = (): void => {
    if (running !== undefined || busy() || pending.size === 0) return;
    running = run().finally(() => {
      running = undefined;
    });
    // A command that arrives meanwhile waits for the run to stop at its next slice and close the
    // store, so the command's open takes over the store's pack index (and its copy epoch).
    life.holdIdleWork(running);
  };
  noteServed = (served) => {
    const carried = unfinished.get(served.storeRoot);
    if (carried !== undefined) carried.noted = true;
    const look = looking.get(served.storeRoot);
    if (look !== undefined) look.noted = true;
    const settled = settledAt.get(served.storeRoot);
    if (settled !== undefined && Date.now() - settled < rescanMs) return;
    pending.set(served.storeRoot, served);
  };
  const state = (): IdleCopyState => {
    const now = Date.now();
    let soonest: number | undefined;
    let settled = 0;
    for (const at of settledAt.values()) {
      if (now - at >= rescanMs) continue;
      settled += 1;
      if (soonest === undefined || at < soonest) soonest = at;
    }
    return { running: running !== undefined, pending: pending.size, looks, copied, bytes, lastLook, settled, nextRescan: soonest === undefined ? null : new Date(soonest + rescanMs).toISOString() };
  };
  const offIdle = life.onIdle(kick);
  const offReport = life.reportFrom('idleCopies', state);
  return {
    async close() {
      closed = true;
      offIdle();
      offReport();
      noteServed = undefined;
      await running;
    },
    state,
    /** How many times a store was looked at for blobs to copy. */
    get looks() {
      return looks;
    },
    /** How many of those looks read the whole store to find what is left (the others took up a stopped look's list). */
    get scans() {
      return scans;
    },
  };
}
