import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { ServerLife } from '../../src/server/life.js';
import { servedProject, startIdleCopies } from '../../src/server/idle-copies.js';
import { installRequestEnvironment } from '../../src/server/request-env.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';

// The server's idle copier: it copies a served store's resting git blobs in while no command is
// served, and once a look found nothing left it does not read the whole store again at every idle
// moment (at 250,000 files each look cost about a second of the server's time, after every command).
// Real git, a real store, the server's own life and service.

let dir: string;
let project: string;
let storeRoot: string;

const git = (...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: project, encoding: 'utf8' });

// As the server does before it serves: the copier runs each store's git with the environment its command had.
beforeAll(() => installRequestEnvironment());

beforeEach(async () => {
  dir = await tempFolder('turnback-idle-copies-');
  project = path.join(dir, 'project');
  storeRoot = path.join(dir, 'store');
  fs.mkdirSync(project, { recursive: true });
  for (let i = 0; i < 6; i++) fs.writeFileSync(path.join(project, `f${i}.txt`), `file ${i}\n`);
  git('init', '-q');
  git('add', '-A');
  git('commit', '-qm', 'init');
});

afterEach(async () => {
  await removeFolder(dir);
});

/** One call past the copy budget (its clean tracked files rest on git), noted as a served command notes it. */
async function servedCall(life: ServerLife, id: string): Promise<void> {
  const done = life.busy();
  const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
  try {
    const observer = new CheckpointObserver({ store, sessionId: id, coverage: { maxPictureFiles: 1 } });
    await observer.callBegin(id);
    await observer.callEnd(id);
    await observer.close();
    servedProject(storeRoot, project);
  } finally {
    await store.close();
  }
  done();
}

async function restingCount(): Promise<number> {
  const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
  try {
    return (await store.restingOnGit()).length;
  } finally {
    await store.close();
  }
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Turns the event loop until `done` says so (the copier works between turns); the deadline only guards a hang. */
async function until(what: string, done: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await flush();
  }
}

describe('the idle copier', () => {
  it('copies a served store in once idle, then does not look at it again after each command until its window passed', async () => {
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    life.start();
    const copier = startIdleCopies(life);
    try {
      await servedCall(life, 'c1');
      await until('one look', () => copier.looks === 1);
      // The look's copies are named under the lock before it ends: wait for the store to say so.
      await until('every blob copied', async () => (await restingCount()) === 0);
      // Three more commands, each followed by an idle moment: nothing is left, so no look.
      for (const id of ['c2', 'c3', 'c4']) await servedCall(life, id);
      await flush();
      await servedCall(life, 'c5');
      expect(copier.looks).toBe(1);
      expect(await restingCount()).toBe(0);
    } finally {
      await copier.close();
      life.stop();
    }
  });

  it('looks again at the next idle moment once the window is over (a window of 0: every idle moment)', async () => {
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    life.start();
    const copier = startIdleCopies(life, 0);
    try {
      await servedCall(life, 'c1');
      await until('one look', () => copier.looks === 1);
      await until('every blob copied', async () => (await restingCount()) === 0);
      await servedCall(life, 'c2');
      await until('a second look', () => copier.looks === 2);
    } finally {
      await copier.close();
      life.stop();
    }
  });

  it('gives way to a command that arrives mid copy-in, then takes the copy-in up where it stopped: every blob copied once, the store read once', async () => {
    // A tree larger than one batch (2,048 blobs), so the copy-in is seen between two batches.
    for (let i = 0; i < 3_000; i++) fs.writeFileSync(path.join(project, `m${i}.txt`), `more ${i}\n`);
    git('add', '-A');
    git('commit', '-qm', 'more');
    const tracked = git('ls-files').split('\n').filter((line) => line !== '').length;
    const copiesFile = path.join(storeRoot, 'objects', 'git-copies');
    const lines = (): string[] => (fs.existsSync(copiesFile) ? fs.readFileSync(copiesFile, 'utf8').split('\n').filter((line) => line !== '') : []);
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    life.start();
    const copier = startIdleCopies(life);
    try {
      await servedCall(life, 'c1');
      // The rendezvous: the first batch is named, the copy-in goes on.
      await until('a first batch named', () => lines().length > 0);
      expect(copier.state().running).toBe(true);
      const done = life.busy();
      // The command is served while the copier waits: it stops at its slice's end, the rest not copied.
      await until('the copier gave way', () => !copier.state().running);
      expect(copier.state().lastLook?.stopped).toBe(true);
      const left = await restingCount();
      expect(left).toBeGreaterThan(0);
      expect(copier.state().lastLook?.left).toBe(left);
      expect(copier.state().pending).toBe(1);
      done();
      await until('the copy-in finished', () => copier.state().lastLook?.stopped === false && !copier.state().running);
      expect(await restingCount()).toBe(0);
      expect(copier.looks).toBe(2);
      // The second look took up the first one's list: the store's documents were read once.
      expect(copier.scans).toBe(1);
      const ids = lines().map((line) => line.split(' ')[0]);
      expect(ids.length).toBe(tracked);
      expect(new Set(ids).size).toBe(tracked);
      expect(copier.state().copied).toBe(tracked);
      expect(copier.state().settled).toBe(1);
    } finally {
      await copier.close();
      life.stop();
    }
  });

  it("makes a command that arrives mid copy-in wait until the copier has let go of the store, so the command's open keeps the store's copy epoch", async () => {
    for (let i = 0; i < 3_000; i++) fs.writeFileSync(path.join(project, `m${i}.txt`), `more ${i}\n`);
    git('add', '-A');
    git('commit', '-qm', 'more');
    const copiesFile = path.join(storeRoot, 'objects', 'git-copies');
    const named = (): boolean => fs.existsSync(copiesFile) && fs.statSync(copiesFile).size > 0;
    const epochNow = async (): Promise<number> => {
      const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
      try {
        await store.loadObjects();
        return store.copyCheck().epoch;
      } finally {
        await store.close();
      }
    };
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    life.start();
    const copier = startIdleCopies(life);
    try {
      await servedCall(life, 'c1');
      await until('a first batch named', named);
      expect(copier.state().running).toBe(true);
      const done = life.busy();
      // No polling: the wait itself ends once the copier has stopped and closed its store.
      expect(await life.idleWorkStopped(30_000)).toBe(true);
      expect(copier.state().running).toBe(false);
      // The command's open takes over the index the copier's open handed on: the same epoch as
      // the next open after it, which two opens at once (each its own index) would not share.
      const first = await epochNow();
      expect(await epochNow()).toBe(first);
      done();
      await until('the copy-in finished', () => copier.state().lastLook?.stopped === false && !copier.state().running);
      // The copier's own appends to its pack do not end the epoch a command's picture saw.
      expect(await epochNow()).toBe(first);
    } finally {
      await copier.close();
      life.stop();
    }
  });

  it('bounds how long a command waits for idle work that does not stop', async () => {
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    expect(await life.idleWorkStopped(5)).toBe(true);
    let finish: () => void = () => undefined;
    life.holdIdleWork(new Promise<void>((resolve) => (finish = resolve)));
    expect(await life.idleWorkStopped(5)).toBe(false);
    finish();
    expect(await life.idleWorkStopped(5)).toBe(true);
    // Work that fails lets go too.
    life.holdIdleWork(Promise.reject(new Error('idle work failed')));
    expect(await life.idleWorkStopped(1_000)).toBe(true);
  });

  it('reads the store afresh after a resumed copy-in when a command noted it meanwhile (its pictures may rest on new blobs)', async () => {
    for (let i = 0; i < 3_000; i++) fs.writeFileSync(path.join(project, `m${i}.txt`), `more ${i}\n`);
    git('add', '-A');
    git('commit', '-qm', 'more');
    const copiesFile = path.join(storeRoot, 'objects', 'git-copies');
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    life.start();
    const copier = startIdleCopies(life);
    try {
      await servedCall(life, 'c1');
      await until('a first batch named', () => fs.existsSync(copiesFile) && fs.statSync(copiesFile).size > 0);
      // A command arrives mid copy-in; meanwhile a new commit's files are pictured (new blobs rest on git).
      const done = life.busy();
      await until('the copier gave way', () => !copier.state().running);
      for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(project, `new${i}.txt`), `new ${i}\n`);
      git('add', '-A');
      git('commit', '-qm', 'new');
      done();
      await servedCall(life, 'c2');
      await until('nothing pending', () => !copier.state().running && copier.state().pending === 0);
      expect(await restingCount()).toBe(0);
      // The list of the stopped look, then the store read again for what the new picture rests on.
      expect(copier.scans).toBe(2);
      expect(copier.state().settled).toBe(1);
    } finally {
      await copier.close();
      life.stop();
    }
  });

  it("asks whether to stop between the reading of the store's documents and its checkpoints, and a run stopped there has no list to take up", async () => {
    const life = new ServerLife(60_000, { mainFile: 'x', version: null, tz: null });
    await servedCall(life, 'c1');
    const store = await CheckpointStore.open(storeRoot, { projectRoot: project });
    try {
      let asked = 0;
      // Asked first once the state documents are read, then once the checkpoints are: stop there.
      const stopped = await store.copyGitBlobsIn({ shouldStop: () => ++asked === 2 });
      expect(stopped).toMatchObject({ stopped: true, copied: 0 });
      expect(stopped.rest).toBeUndefined();
      expect(asked).toBe(2);
      const full = await store.copyGitBlobsIn({ shouldStop: () => false });
      expect(full).toMatchObject({ stopped: false, copied: 6, left: 0, rest: [] });
    } finally {
      await store.close();
    }
    expect(await restingCount()).toBe(0);
  });
});
