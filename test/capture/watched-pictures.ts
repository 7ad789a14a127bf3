import { execFileSync, spawn } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, expect } from 'vitest';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { gitBlobId, gitBlobIdOf } from '../../src/core/git-blob.js';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { changedPathsBetween, diffPictures } from '../../src/capture/diff.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { takePicture, type Picture } from '../../src/capture/picture.js';
import { LayeredRecords } from '../../src/capture/layered-records.js';
import { countCoverage } from '../../src/capture/picture-coverage.js';
import { pictureDelta } from '../../src/capture/picture-persist.js';
import { pictureStoreOf } from '../../src/capture/stable-read.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import type { TreeWatcher, WatchAnswer } from '../../src/fs/tree-watcher.js';
import { startWatchman } from '../../src/fs/watchman.js';
import { closeWatchers, forgetWatcher, useWatchers, watcherReady } from '../../src/capture/watchers.js';
import { startPrivateWatchman, type PrivateWatchman } from '../helpers/watchman.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder } from '../helpers/temp.js';

// The property that lets anyone trust the watcher (issue #28): random changes made by other
// processes between pictures, and every watcher-backed picture equal to a full sweep of the same
// moment. Shared by the quick run (test/capture/watched-pictures.test.ts) and the fault
// campaign's large one (test/faults/watcher.test.ts).

const CHANGES = path.join(path.dirname(fileURLToPath(import.meta.url)), 'tree-changes.mjs');

const FOLDERS = ['', 'a', 'a/b', 'c', 'c/d'];
// `.env` is a credential: recorded uncopied, so its folder needs the picture's attention every time (never carried unlooked).
const NAMES = ['f0', 'f1', 'g.txt', 'h.md', '.env'];
const inFolder = (folder: string, name: string): string => (folder === '' ? name : `${folder}/${name}`);
const filePath = fc.tuple(fc.constantFrom(...FOLDERS), fc.constantFrom(...NAMES)).map(([f, n]) => inFolder(f, n));
const folderPath = fc.constantFrom(...FOLDERS.filter((f) => f !== ''), 'n', 'n/e', 'c/d/x');
const anyPath = fc.oneof(filePath, folderPath);
const text = fc.string({ maxLength: 24 });

/**
 * One change another process makes; `overflow` is the watcher losing its events (simulated);
 * `damage-copy` flips a byte of the stored copy (its pack record or block, or its loose file) of
 * one file the last picture names, the file itself untouched: the next picture must not point at it.
 */
export type Change = Record<string, unknown> & { op: string };

const change: fc.Arbitrary<Change> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant('write'), path: filePath, data: text }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('append'), path: filePath, data: text }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('same-second'), path: filePath, data: fc.string({ minLength: 2, maxLength: 12 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('rm'), path: anyPath }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('mkdir'), path: folderPath }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('rename'), from: anyPath, to: anyPath }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('chmod'), path: anyPath, mode: fc.constantFrom(0o644, 0o755, 0o600, 0o700) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('symlink'), path: filePath, target: fc.constantFrom('f0', '../f1', 'nowhere') }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('flap'), path: filePath, times: fc.integer({ min: 1, max: 6 }), keep: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rename-out'), path: folderPath }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('rename-in'), path: folderPath, data: text }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('write'), path: fc.constantFrom('.gitignore', 'a/.gitignore'), data: fc.constantFrom('f1\n', 'b/\n', '*.txt\n', '', '!f1\n') }) },
  { weight: 1, arbitrary: fc.constant({ op: 'overflow' }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('damage-copy'), pick: fc.nat(), spot: fc.nat() }) },
);

/**
 * What git does to a committed project's index between pictures (the git variant of the property):
 * a file staged, all changes committed, a file taken out of the index, the index rewritten with
 * new stat data only. Each moves git's index, which decides whether a record may rest on git's blob.
 */
const gitChange: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ op: fc.constant('git-add'), path: filePath }),
  fc.constant({ op: 'git-commit' }),
  fc.record({ op: fc.constant('git-rm-cached'), path: filePath }),
  fc.constant({ op: 'git-refresh' }),
);

/** Steps between pictures: each is one process's changes (`git`: git's own among them, for a committed project). */
export const steps: (maxSteps: number, git?: boolean) => fc.Arbitrary<Change[][]> = (maxSteps, git = false) =>
  fc.array(fc.array(git ? fc.oneof({ weight: 5, arbitrary: change }, { weight: 1, arbitrary: gitChange }) : change, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: maxSteps });

/**
 * A watcher that, told to, loses what changed (its answer consumed, not vouched), as an overflow
 * does; or lies: vouches for an answer without the paths in `hide` (what the verification sweep is for).
 */
export class LosingWatcher implements TreeWatcher {
  loseNext = false;
  readonly hide = new Set<string>();
  constructor(readonly real: TreeWatcher) {}
  get root(): string {
    return this.real.root;
  }
  settle(): ReturnType<TreeWatcher['settle']> {
    return this.real.settle();
  }
  async changesSince(token: string): Promise<WatchAnswer> {
    const answer = await this.real.changesSince(token);
    if (answer.vouched && this.hide.size > 0) return { ...answer, paths: answer.paths.filter((p) => !this.hide.has(p)) };
    if (!this.loseNext) return answer;
    this.loseNext = false;
    return { vouched: false, token: answer.token, reason: 'overflow', detail: 'simulated: the events were lost' };
  }
  status(): ReturnType<TreeWatcher['status']> {
    return this.real.status();
  }
  close(): Promise<void> {
    return this.real.close();
  }
}

/** The watchers the property's factory made, by root, to lose events on demand. */
export const losing = new Map<string, LosingWatcher>();

/** The factory the property hands to `useWatchers`: watchman at `sockname`, able to lose events. */
export function losingFactory(sockname: string) {
  return async (root: string) => {
    const made = await startWatchman(root, { sockname });
    if ('refused' in made) return made;
    const watcher = new LosingWatcher(made);
    losing.set(root, watcher);
    return watcher;
  };
}

/**
 * For the calling test file: a private watchman service from before its tests to after them, its
 * watchers made by {@link losingFactory}. Returns the service (its pid, for SIGSTOP) once started.
 */
export function watchmanForTheseTests(): () => PrivateWatchman {
  let watchman: PrivateWatchman | undefined;
  beforeAll(async () => {
    watchman = await startPrivateWatchman();
    await useWatchers(losingFactory(watchman.sockname));
  });
  afterAll(async () => {
    await useWatchers(undefined);
    await closeWatchers();
    await watchman?.stop();
  });
  return () => {
    if (watchman === undefined) throw new Error('the watchman service is not started yet');
    return watchman;
  };
}

/** A picture as comparable text: each record's stat and state. */
export function describePicture(picture: Picture): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [p, r] of picture.records) {
    const s = r.state;
    const state = s.type === 'file' ? `file ${s.hash} ${s.object} ${s.mode}` : s.type === 'symlink' ? `link ${s.target}` : `${s.type} ${'reason' in s ? String(s.reason) : ''}`;
    out[p] = `${r.type} ${r.size} ${r.mode.toString(8)} ${r.mtimeMs} ${r.ino} ${r.target ?? ''} | ${state}`;
  }
  return out;
}

/** Writes the starting tree: a file or two in every folder, a root `.gitignore`; with `git`, committed. */
function startingTree(root: string, git: boolean): void {
  for (const folder of FOLDERS) {
    nodeFs.mkdirSync(path.join(root, folder), { recursive: true });
    for (const name of NAMES.slice(0, 2)) nodeFs.writeFileSync(path.join(root, inFolder(folder, name)), `${folder}/${name}\n`);
  }
  nodeFs.writeFileSync(path.join(root, '.gitignore'), '*.log\n');
  if (!git) return;
  const run = (args: string[]): void => void execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: root, stdio: 'ignore' });
  run(['init', '-q']);
  run(['add', '-A']);
  run(['commit', '-qm', 'start']);
  // git's rule: an entry as new as the index file itself is racily clean, never resting on its
  // blob; the index is written again a moment later so the committed files are clean.
  const later = new Date(Date.now() + 2000);
  nodeFs.utimesSync(path.join(root, '.git', 'index'), later, later);
}

/** Flips one bit of the stored copy of the `pick`-th stored file of `picture` (see {@link Change}). */
async function damageCopy(store: CheckpointStore, picture: Picture, pick: number, spot: number): Promise<void> {
  const objects = [...picture.records.values()].flatMap((record) => (record.state.type === 'file' ? [record.state.object] : [])).sort();
  if (objects.length === 0) return;
  const object = objects[pick % objects.length] as string;
  const info = (await store.listObjects()).find((candidate) => candidate.key === object);
  if (info === undefined) return;
  const start = info.offset ?? 0;
  const length = info.recordLength ?? info.diskSize;
  if (length <= 0) return;
  const at = start + (spot % length);
  const fd = nodeFs.openSync(info.path, 'r+');
  try {
    const byte = Buffer.alloc(1);
    nodeFs.readSync(fd, byte, 0, 1, at);
    byte[0] = (byte[0] as number) ^ (1 << spot % 8);
    nodeFs.writeSync(fd, byte, 0, 1, at);
  } finally {
    nodeFs.closeSync(fd);
  }
}

/** What one run of the property saw: how its pictures were planned. */
export interface RunCounts {
  same: number;
  changes: number;
  sweeps: number;
  pictures: number;
  /** Pictures whose walk carried the last picture's map (records read through a layer over it). */
  carried?: number;
  /** Folders the change-set walks took with their whole subtree, unvisited (Picture.foldersTakenWhole). */
  takenWhole?: number;
  /** Records of the pictures that rest on git's blob (the git variant). */
  onGit?: number;
}

/**
 * One run: a fresh project, a picture, then per step another process's changes and a picture
 * through the watcher, each compared with a full sweep of the same moment (today's sweep over the
 * last picture's stat cache) and with the bytes on disk.
 */
export async function runSteps(plan: Change[][], totals: RunCounts, options: { git?: boolean } = {}): Promise<void> {
  const git = options.git === true;
  await loadHasher();
  const base = await tempFolder('turnback-watched-');
  const project = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  nodeFs.mkdirSync(project);
  nodeFs.mkdirSync(outside);
  startingTree(project, git);
  const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: project });
  // Committed: a copy budget of two files, so most clean tracked files rest on git's blobs.
  const coverage = resolveCoverage(git ? { maxPictureFiles: 2 } : {});
  const keeper = new PictureKeeper({ store, projectRoot: project, coverage, fs: nodeFileSystem, liveGenerations: () => [] });
  const reference = pictureStoreOf(store, nodeFileSystem);
  await watcherReady(project);
  let last = await keeper.take({});
  countCoverage(last.records, 0);
  /** The pictures before `last`, newest first (a few). */
  const back: Picture[] = [];
  const sameSecond = new Set<string>();
  const other = spawn(process.execPath, [CHANGES, project, outside], { stdio: ['pipe', 'pipe', 'inherit'] });
  const done: (() => void)[] = [];
  other.stdout.setEncoding('utf8');
  other.stdout.on('data', (chunk: string) => {
    for (let i = chunk.split('done\n').length - 1; i > 0; i--) done.shift()?.();
  });
  const exited = new Promise<void>((resolve) => other.once('exit', () => resolve()));
  /** Another process applies `ops`; resolves once it says they are done. */
  const change = (ops: Change[]): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      done.push(resolve);
      void exited.then(() => reject(new Error('the process making the changes ended')));
      other.stdin.write(`${JSON.stringify(ops)}\n`);
    });
  try {
    for (const step of plan) {
      const ops = step.filter((op) => op.op !== 'overflow' && op.op !== 'damage-copy');
      const damages = step.filter((op) => op.op === 'damage-copy');
      for (const damage of damages) await damageCopy(store, last, damage.pick as number, damage.spot as number);
      // No write marks a damage: a tree the watcher saw no change in gives the last picture back
      // only while the store still vouches for its copies, so a damage alone must be caught too.
      if (step.some((op) => op.op === 'overflow')) {
        const watcher = losing.get(project);
        expect(watcher).toBeDefined();
        (watcher as LosingWatcher).loseNext = true;
      }
      for (const op of ops) if (op.op === 'same-second') sameSecond.add(op.path as string);
      await change(ops);
      const previous = last.records;
      // The last picture stays the baseline of an open call: a picture layered over it never writes to it.
      const lastSeen = describePicture(last);
      const picture = await keeper.take({});
      totals.pictures++;
      if (picture.records instanceof LayeredRecords) totals.carried = (totals.carried ?? 0) + 1;
      totals.takenWhole = (totals.takenWhole ?? 0) + (picture.foldersTakenWhole ?? 0);
      expect(describePicture(last), 'the last picture, after the next one').toEqual(lastSeen);
      // Before the reference sweep, which copies a damaged copy's file again (and so repairs it):
      // every copy the keeper's picture names reads back as the file's bytes, not one a step damaged
      // (a same-size write with its mtime put back excepted: no stat sees it).
      for (const [p, record] of picture.records) {
        if (record.state.type !== 'file' || sameSecond.has(p)) continue;
        const bytes = nodeFs.readFileSync(path.join(project, p));
        const blob = gitBlobIdOf(record.state.object);
        if (blob !== undefined) totals.onGit = (totals.onGit ?? 0) + 1;
        expect(blob ?? record.state.hash, p).toBe(blob !== undefined ? gitBlobId(bytes) : contentHash(bytes));
        expect(Buffer.compare(await store.readObject(record.state.object), bytes), `${p}'s copy ${record.state.object}`).toBe(0);
      }
      const sweep = await takePicture({ store: reference, projectRoot: project, coverage, cache: { records: previous }, exclude: [store.root] });
      expect(describePicture(picture), `after ${JSON.stringify(step)}`).toEqual(describePicture(sweep));
      expect(picture.unchecked).toEqual(sweep.unchecked);
      // The delta the keeper persists (taken from the last one and the change) is the full pass's.
      const delta = keeper.deltaOf(picture.records);
      const full = pictureDelta(picture.records, keeper.base);
      expect(delta.base).toEqual(full.base);
      expect(delta.records.map((r) => r.path).sort()).toEqual(full.records.map((r) => r.path).sort());
      expect(new Set(delta.records)).toEqual(new Set(full.records));
      expect([...delta.removed].sort()).toEqual([...full.removed].sort());
      expect(picture.partial).toBe(sweep.partial);
      // The coverage counts, taken from the last picture's and the change, are a full pass's.
      expect(countCoverage(picture.records, 0), 'coverage counts').toEqual(countCoverage(new Map(picture.records), 0));
      // What a call's end compares — the picture against one a few pictures back, over the paths
      // the maps between them name — is the full comparison's.
      for (const earlier of [last, ...back]) {
        const only = changedPathsBetween(earlier.records, picture.records);
        if (only !== undefined) expect(diffPictures(earlier, picture, only), `diff over the changed paths after ${JSON.stringify(step)}`).toEqual(diffPictures(earlier, picture));
      }
      back.unshift(last);
      back.length = Math.min(back.length, 3);
      last = picture;
    }
  } finally {
    other.stdin.end();
    await exited;
    totals.same += keeper.watched.counts.same;
    totals.changes += keeper.watched.counts.changes;
    totals.sweeps += keeper.watched.counts.sweeps;
    await keeper.close();
    await store.close();
    await forgetWatcher(project);
    losing.delete(project);
  }
}
