import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveCoverage } from '../../src/capture/coverage.js';
import { PictureKeeper } from '../../src/capture/picture-keeper.js';
import { takePicture } from '../../src/capture/picture.js';
import { pictureStoreOf } from '../../src/capture/stable-read.js';
import { watcherReady } from '../../src/capture/watchers.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { startWatchman } from '../../src/fs/watchman.js';
import { ownWatchman, projectConfigRefusal, WATCHMAN_COOKIE_PREFIX } from '../../src/fs/watchman-service.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { describePicture, watchmanForTheseTests } from './watched-pictures.js';

// Watchman syncs every query through a cookie file in its cookie folder: by default the first of
// .git/.svn/.hg that exists. turnback's own service (src/fs/watchman-service.ts) keeps them out of
// `.git`: nothing is ever created in a project's `.git` by watcher-backed pictures, and the
// cookies it makes at the root never show in a picture.

const watchman = watchmanForTheseTests();

/** Every entry under `folder`, with its kind, size, mode, inode and mtime: what a write there would change. */
function listing(folder: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string): void => {
    for (const name of nodeFs.readdirSync(dir)) {
      const full = path.join(dir, name);
      const s = nodeFs.lstatSync(full);
      out[path.relative(folder, full)] = `${s.isDirectory() ? 'd' : 'f'} ${s.size} ${s.mode.toString(8)} ${s.ino} ${s.mtimeMs}`;
      if (s.isDirectory()) walk(full);
    }
  };
  out['.'] = `d ${nodeFs.statSync(folder).mtimeMs}`;
  walk(folder);
  return out;
}

/**
 * Every event under `folder` while it is watched (fs.watch on each of its folders, so nothing
 * depends on recursive watching); `cookie()` resolves at the first that names a watchman cookie.
 */
function collectEvents(folder: string): { names: string[]; cookie(): Promise<void>; close(): void } {
  const names: string[] = [];
  const watchers: nodeFs.FSWatcher[] = [];
  let sawCookie: () => void = () => undefined;
  const cookieSeen = new Promise<void>((resolve) => (sawCookie = resolve));
  const watch = (dir: string): void => {
    watchers.push(
      nodeFs.watch(dir, (event, name) => {
        names.push(`${event} ${path.relative(folder, path.join(dir, String(name)))}`);
        if (String(name).startsWith(WATCHMAN_COOKIE_PREFIX)) sawCookie();
      }),
    );
    for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) watch(path.join(dir, entry.name));
  };
  watch(folder);
  return { names, cookie: () => cookieSeen, close: () => watchers.forEach((w) => w.close()) };
}

/** A committed git repository with a few folders. */
async function gitProject(): Promise<{ root: string; base: string }> {
  const base = await tempFolder('turnback-cookies-');
  const root = path.join(base, 'project');
  const files: Record<string, string> = {};
  for (let i = 0; i < 12; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
  await writeTree(root, files);
  const git = (...args: string[]): void => void execFileSync('git', args, { cwd: root, stdio: 'ignore', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '-m', 'start');
  return { root: nodeFs.realpathSync(root), base };
}

describe('the watcher never writes into .git', () => {
  it('the check sees a cookie made in .git: a watchman service with its default config puts them there', async () => {
    // Without this the check below could pass by seeing nothing at all.
    const { root } = await gitProject();
    const dir = nodeFs.mkdtempSync(path.join(os.tmpdir(), 'turnback-default-watchman-'));
    // A service started by hand with no global config: watchman's defaults, as a user's runs.
    const flags = [`--sockname=${dir}/sock`, `--statefile=${dir}/state`, `--logfile=${dir}/log`, `--pidfile=${dir}/pid`, '--no-save-state'];
    execFileSync('watchman', [...flags, 'get-sockname'], { stdio: 'ignore', env: { ...process.env, WATCHMAN_CONFIG_FILE: path.join(dir, 'none.json') } });
    const events = collectEvents(path.join(root, '.git'));
    try {
      const watcher = await startWatchman(root, { sockname: `${dir}/sock` });
      if ('refused' in watcher) throw new Error(watcher.detail);
      await watcher.settle();
      const settled = await watcher.settle();
      await watcher.changesSince(settled.token as string);
      await watcher.close();
      await events.cookie();
      expect(events.names.filter((e) => e.includes(WATCHMAN_COOKIE_PREFIX)).length).toBeGreaterThan(0);
    } finally {
      events.close();
      execFileSync('watchman', [...flags, '--no-spawn', 'shutdown-server'], { stdio: 'ignore' });
    }
  }, 60_000);

  it('watcher-backed pictures of a git project create, remove and change nothing in .git; cookies come and go at the root', async () => {
    const { root, base } = await gitProject();
    const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: root });
    const keeper = new PictureKeeper({ store, projectRoot: root, coverage: resolveCoverage(), fs: nodeFileSystem, liveGenerations: () => [] });
    await watcherReady(root);
    const dotGit = path.join(root, '.git');
    const before = listing(dotGit);
    const gitEvents = collectEvents(dotGit);
    const rootEvents = collectEvents(path.join(root, 'src'));
    const rootWatch = nodeFs.watch(root);
    let rootCookie: () => void = () => undefined;
    const rootCookieSeen = new Promise<void>((resolve) => (rootCookie = resolve));
    rootWatch.on('change', (_event, name) => {
      if (String(name).startsWith(WATCHMAN_COOKIE_PREFIX)) rootCookie();
    });
    try {
      await keeper.take({});
      for (let i = 0; i < 6; i++) {
        await writeFile(path.join(root, `src/f${i}.txt`), `changed ${i}\n`);
        await keeper.take({});
      }
      await keeper.take({});
      expect(keeper.watched.counts.changes).toBeGreaterThanOrEqual(6);
      expect(keeper.watched.counts.same).toBeGreaterThanOrEqual(1);
      // A cookie made at the root: the queries were synced through one (the flush), not answered unsynced.
      await rootCookieSeen;
    } finally {
      rootEvents.close();
      rootWatch.close();
      gitEvents.close();
    }
    expect(gitEvents.names).toEqual([]);
    // None in a subfolder either: the cookie folder is the root.
    expect(rootEvents.names.filter((e) => e.includes(WATCHMAN_COOKIE_PREFIX))).toEqual([]);
    expect(listing(dotGit)).toEqual(before);
    expect(nodeFs.readdirSync(root).filter((n) => n.startsWith(WATCHMAN_COOKIE_PREFIX))).toEqual([]);
    await keeper.close();
    await store.close();
  }, 60_000);

  it('a cookie at the root never shows in a picture, a full sweep, or what the store keeps', async () => {
    const { root, base } = await gitProject();
    const store = await CheckpointStore.open(path.join(base, 'store'), { projectRoot: root });
    const keeper = new PictureKeeper({ store, projectRoot: root, coverage: resolveCoverage(), fs: nodeFileSystem, liveGenerations: () => [] });
    await watcherReady(root);
    const first = await keeper.take({});
    // One left behind (a service killed mid-query), made between pictures: the watcher reports it.
    const leftover = `${WATCHMAN_COOKIE_PREFIX}host-1-1`;
    await writeFile(path.join(root, leftover), '');
    await writeFile(path.join(root, 'src/f1.txt'), 'changed\n');
    const watched = await keeper.take({});
    expect(keeper.watched.counts.changes).toBe(1);
    const sweep = await takePicture({ store: pictureStoreOf(store, nodeFileSystem), projectRoot: root, coverage: resolveCoverage(), cache: { records: first.records }, exclude: [store.root] });
    expect(describePicture(watched)).toEqual(describePicture(sweep));
    for (const picture of [first, watched, sweep]) expect([...picture.records.keys()].filter((p) => p.includes('watchman-cookie'))).toEqual([]);
    // A cookie in a subfolder is someone's file like any other: only the root's are watchman's.
    await writeFile(path.join(root, 'src', leftover), 'mine\n');
    const nested = await keeper.take({});
    expect(nested.records.has(`src/${leftover}`)).toBe(true);
    await keeper.close();
    await store.close();
    // No document of the store names a root cookie (manifests, picture bases, state).
    const named: string[] = [];
    const scan = (dir: string): void => {
      for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) scan(full);
        // As a path of its own (a JSON string that starts with it), not as the end of `src/…`.
        else if (nodeFs.readFileSync(full).includes(`"${leftover}`)) named.push(full);
      }
    };
    scan(store.root);
    expect(named).toEqual([]);
    // And the check can see a name there: the subfolder's file of the same name is in the store's bytes.
    const all: string[] = [];
    const every = (dir: string): void => {
      for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) entry.isDirectory() ? every(path.join(dir, entry.name)) : all.push(path.join(dir, entry.name));
    };
    every(store.root);
    expect(all.some((file) => nodeFs.readFileSync(file).includes(`src/${leftover}`))).toBe(true);
  }, 60_000);
});

describe("a project's own .watchmanconfig", () => {
  it('that sets ignore_vcs or ignore_dirs keeps the watcher from vouching (it would override where cookies go)', async () => {
    const root = await tempFolder('turnback-watchmanconfig-');
    expect(projectConfigRefusal(root)).toBeUndefined();
    await writeFile(path.join(root, '.watchmanconfig'), '{"settle": 30}');
    expect(projectConfigRefusal(root)).toBeUndefined();
    await writeFile(path.join(root, '.watchmanconfig'), '{"ignore_vcs": [".git"]}');
    expect(projectConfigRefusal(root)).toMatch(/sets ignore_vcs/);
    const refused = await startWatchman(root, { sockname: watchman().sockname });
    expect(refused).toMatchObject({ refused: true, reason: 'unwatchable' });
    await writeFile(path.join(root, '.watchmanconfig'), '{"ignore_dirs": ["node_modules"]');
    expect(projectConfigRefusal(root)).toMatch(/not JSON/);
  });

  it('turnback starts its own service with its own config, beside any the user runs', async () => {
    const dir = path.join(nodeFs.mkdtempSync(path.join(os.tmpdir(), 'turnback-own-watchman-')), 'service');
    const own = await ownWatchman(dir);
    if ('refused' in own) throw new Error(own.detail);
    try {
      expect(own.sockname).toBe(path.join(dir, 'sock'));
      expect(JSON.parse(nodeFs.readFileSync(path.join(dir, 'config.json'), 'utf8'))).toMatchObject({ ignore_vcs: [], ignore_dirs: ['.git', '.hg', '.svn'] });
      expect(own.sockname).not.toBe(watchman().sockname);
      expect((nodeFs.statSync(dir).mode & 0o077)).toBe(0);
    } finally {
      execFileSync('watchman', [`--sockname=${own.sockname}`, '--no-spawn', 'shutdown-server'], { stdio: 'ignore' });
    }
  }, 60_000);
});
