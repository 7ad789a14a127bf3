import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage, type ResolvedCoverage } from '../../src/capture/coverage.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { takePicture, type Picture } from '../../src/capture/picture.js';
import { pictureStoreOf } from '../../src/capture/stable-read.js';
import { watcherReady } from '../../src/capture/watchers.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { describePicture, watchmanForTheseTests } from './watched-pictures.js';

// A change-set walk takes each subtree no change lies under whole, unvisited (subtree-carry.ts).
// Each case names the folders it expects carried and holds the picture to a full sweep of the
// same moment: the records, what was left unchecked or by the limit, the ignored names.

watchmanForTheseTests();

// Ten folders: '', src, src/a, src/b, src/b/c, docs, lib, lib/x, lib/x/y, lib/x/y/z.
const TREE = {
  'README.md': 'readme\n',
  'src/a/f1.ts': 'a1\n',
  'src/a/f2.ts': 'a2\n',
  'src/b/g.ts': 'b\n',
  'src/b/c/h.ts': 'c\n',
  'docs/d1.md': 'd1\n',
  'docs/d2.md': 'd2\n',
  'lib/l.js': 'l\n',
  'lib/x/x.js': 'x\n',
  'lib/x/y/y.js': 'y\n',
  'lib/x/y/z/z1.js': 'z1\n',
  'lib/x/y/z/z2.js': 'z2\n',
};

interface Project {
  root: string;
  outside: string;
  keeper: PictureKeeper;
  store: CheckpointStore;
  coverage: ResolvedCoverage;
  /** The last picture the keeper took. */
  last: Picture;
  /** A picture through the keeper (the watcher's change set), held to a full sweep of the same moment. */
  take(): Promise<Picture>;
  close(): Promise<void>;
}

async function project(extra: Record<string, string> = {}, options: { coverage?: ResolvedCoverage; git?: boolean } = {}): Promise<Project> {
  const base = await tempFolder('turnback-carry-');
  const root = path.join(base, 'project');
  const outside = path.join(base, 'outside');
  nodeFs.mkdirSync(outside);
  await writeTree(root, { ...TREE, ...extra });
  if (options.git === true) git(root, ['init', '-q'], ['add', '-A'], ['commit', '-qm', 'start']);
  const coverage = options.coverage ?? resolveCoverage(options.git === true ? { maxPictureFiles: 2 } : {});
  const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: root });
  const keeper = new PictureKeeper({ store, projectRoot: root, coverage, fs: nodeFileSystem, liveGenerations: () => [] });
  const reference = pictureStoreOf(store, nodeFileSystem);
  await watcherReady(root);
  const made: Project = {
    root,
    outside,
    keeper,
    store,
    coverage,
    last: await keeper.take({}),
    async take() {
      const previous = made.last.records;
      const picture = await keeper.take({});
      const sweep = await takePicture({ store: reference, projectRoot: root, coverage, cache: { records: previous }, exclude: [store.root] });
      expect(describePicture(picture)).toEqual(describePicture(sweep));
      expect(picture.unchecked).toEqual(sweep.unchecked);
      expect(picture.partial).toBe(sweep.partial);
      expect(picture.left).toEqual(sweep.left);
      expect(picture.ignored).toBe(sweep.ignored);
      expect([...(picture.ignoredPaths ?? [])].sort()).toEqual([...(sweep.ignoredPaths ?? [])].sort());
      made.last = picture;
      return picture;
    },
    async close() {
      await keeper.close();
      await store.close();
    },
  };
  return made;
}

function git(root: string, ...commands: string[][]): void {
  for (const args of commands) execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t.invalid', ...args], { cwd: root, stdio: 'ignore' });
  // An entry as new as the index is racily clean (never resting on its blob): the index is dated later.
  const later = new Date(Date.now() + 2000);
  nodeFs.utimesSync(path.join(root, '.git', 'index'), later, later);
}

const write = (p: Project, rel: string, text: string): void => nodeFs.writeFileSync(path.join(p.root, rel), text);

describe('change-set walks take untouched subtrees whole', () => {
  it('an edit in one folder carries every subtree beside the folders above it; the next edit elsewhere carries the first one', async () => {
    const p = await project();
    write(p, 'src/a/f1.ts', 'a1, edited\n');
    // Visited: '', src, src/a. Carried: src/b and src/b/c, docs, lib and its three folders.
    expect((await p.take()).foldersTakenWhole).toBe(7);
    write(p, 'docs/d1.md', 'd1, edited\n');
    // src was visited by the last walk, so its note was forgotten: asked again, and carried.
    expect((await p.take()).foldersTakenWhole).toBe(8);
    write(p, 'lib/x/y/z/z1.js', 'z1, edited\n');
    expect((await p.take()).foldersTakenWhole).toBe(5);
    expect(p.last.records.get('lib/x/y/z/z1.js')?.size).toBe('z1, edited\n'.length);
    await p.close();
  });

  it('a folder holding a record that is never quiet (an uncopied credential) is visited every time, and so is every folder above it', async () => {
    const p = await project({ 'lib/x/.env': 'SECRET=1\n' });
    write(p, 'src/a/f1.ts', 'a1, edited\n');
    // lib and lib/x cannot be carried (lib/x holds the .env); lib/x/y is, with lib/x/y/z.
    expect((await p.take()).foldersTakenWhole).toBe(5);
    await p.close();
  });

  it('ignored names inside a carried subtree are carried with it', async () => {
    const p = await project({ 'lib/.gitignore': '*.tmp\n', 'lib/x/scratch.tmp': 'tmp\n', 'lib/x/node_modules/pkg/index.js': 'pkg\n' });
    write(p, 'src/a/f1.ts', 'a1, edited\n');
    const picture = await p.take();
    expect(picture.foldersTakenWhole).toBe(7);
    expect(picture.ignoredPaths).toEqual(expect.arrayContaining(['lib/x/scratch.tmp']));
    expect(picture.records.has('lib/x/node_modules/pkg/index.js')).toBe(false);
    await p.close();
  });

  it('rules changed above an untouched subtree make the walk descend into it (a .gitignore edit above, one made inside)', async () => {
    const p = await project({ 'lib/.gitignore': '*.tmp\n' });
    write(p, 'lib/.gitignore', '*.tmp\nz/\n');
    const above = await p.take();
    expect(above.records.has('lib/x/y/z/z1.js')).toBe(false);
    expect(above.records.has('lib/x/y/y.js')).toBe(true);
    // Only src (4 folders) and docs are carried: lib's rules changed, so all under lib is walked.
    expect(above.foldersTakenWhole).toBe(5);
    write(p, 'lib/x/y/.gitignore', 'y.js\n');
    const inside = await p.take();
    expect(inside.records.has('lib/x/y/y.js')).toBe(false);
    expect(inside.records.has('lib/x/x.js')).toBe(true);
    write(p, 'lib/.gitignore', '*.tmp\n');
    const back = await p.take();
    expect(back.records.has('lib/x/y/z/z1.js')).toBe(true);
    await p.close();
  });

  it('a folder renamed out of the project and one renamed in are seen, and what lies beside them is carried', async () => {
    const p = await project();
    nodeFs.mkdirSync(path.join(p.outside, 'came/in'), { recursive: true });
    nodeFs.writeFileSync(path.join(p.outside, 'came/in/new.txt'), 'new\n');
    nodeFs.renameSync(path.join(p.outside, 'came'), path.join(p.root, 'docs/came'));
    nodeFs.renameSync(path.join(p.root, 'lib/x'), path.join(p.outside, 'x'));
    const picture = await p.take();
    expect(picture.records.has('docs/came/in/new.txt')).toBe(true);
    expect(picture.records.has('lib/x/x.js')).toBe(false);
    expect(picture.foldersTakenWhole).toBeGreaterThan(0);
    // And back: the folder renamed in again under another name, the one renamed in moved within.
    nodeFs.renameSync(path.join(p.outside, 'x'), path.join(p.root, 'src/b/c/x'));
    nodeFs.renameSync(path.join(p.root, 'docs/came'), path.join(p.root, 'lib/came'));
    const again = await p.take();
    expect(again.records.has('src/b/c/x/y/z/z2.js')).toBe(true);
    expect(again.records.has('lib/came/in/new.txt')).toBe(true);
    await p.close();
  });

  it('the walk limit falling inside an untouched subtree stops where a sweep stops (it is walked folder by folder there)', async () => {
    // A sweep lists 21 entries: within the limit. Three new files in the project folder (visited
    // first) make 24, so the limit falls in whichever subtree the walk reaches last, untouched.
    const p = await project({}, { coverage: resolveCoverage({ maxWalkEntries: 23 }) });
    expect(p.last.partial).toBe(false);
    for (const name of ['n1', 'n2', 'n3']) write(p, name, `${name}\n`);
    const picture = await p.take();
    expect(picture.partial).toBe(true);
    expect(picture.left).toMatchObject({ reason: 'walk-entries' });
    expect(picture.foldersTakenWhole).toBeGreaterThan(0);
    await p.close();
  });

  it('in a repository, records resting on git stay quiet only under the index they were found with: a commit makes each subtree be asked again', async () => {
    const p = await project({}, { git: true });
    write(p, 'src/a/f1.ts', 'a1, edited\n');
    expect((await p.take()).foldersTakenWhole).toBe(7);
    git(p.root, ['add', 'src/a/f1.ts'], ['commit', '-qm', 'edit']);
    write(p, 'docs/d1.md', 'd1, edited\n');
    const after = await p.take();
    expect(after.foldersTakenWhole).toBeGreaterThan(0);
    await p.close();
  });
});
