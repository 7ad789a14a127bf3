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
});
