import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError, isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import type { StoreBackend } from '../../src/remote/backend.js';
import { DirectoryBackend } from '../../src/remote/directory-backend.js';
import { pullCheckpoints, pushCheckpoints, remoteCheckpointIds } from '../../src/remote/sync.js';
import { workspaceIdentity, type WorkspaceIdentity } from '../../src/remote/workspace-identity.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { withSeed } from '../helpers/seed.js';
import { tempFolder, writeTree } from '../helpers/temp.js';
import { listing } from '../session/helpers.js';
import { interceptBackend, remoteIsWhole } from './scenarios.js';

// Push from one clone, pull into another at a different path, undo there (issue #16). The
// backend here is the directory backend; the conformance suite holds the S3 backend to the same
// contract, and test/remote/s3-sync.test.ts runs the same round trip on a real S3 server.

const git = (cwd: string, ...args: string[]): string => execFileSync('git', args, { cwd, encoding: 'utf8' });

interface Machine {
  project: string;
  store: CheckpointStore;
  workspace: WorkspaceIdentity;
}

/** A repository with a few tracked files, and a clone of it at another path. */
async function twoClones(): Promise<{ base: string; a: Machine; b: Machine }> {
  const base = await tempFolder('turnback-sync-');
  const origin = path.join(base, 'machine-a', 'project');
  await fs.mkdir(origin, { recursive: true });
  const files: Record<string, string> = {};
  for (let i = 0; i < 6; i++) files[`src/f${i}.txt`] = `tracked file ${i}\n`.repeat(20 + i);
  await writeTree(origin, { ...files, 'README.md': 'readme\n' });
  git(origin, 'init', '-q');
  git(origin, 'add', '-A');
  git(origin, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'first');
  const clone = path.join(base, 'elsewhere', 'b-clone');
  await fs.mkdir(path.dirname(clone), { recursive: true });
  git(base, 'clone', '-q', origin, clone);
  const machine = async (project: string, store: string): Promise<Machine> => ({ project, store: await CheckpointStore.open(store, { projectRoot: project }), workspace: await workspaceIdentity(project) });
  return { base, a: await machine(origin, path.join(base, 'machine-a', 'store')), b: await machine(clone, path.join(base, 'elsewhere', 'store')) };
}

/** One turn of whole-tree call pictures around `change`, sealed. */
async function turn(machine: Machine, change: () => Promise<void>, coverage = {}): Promise<CheckpointId> {
  const observer = new CheckpointObserver({ store: machine.store, sessionId: 'agent-1', coverage });
  const begun = await observer.callBegin('call');
  await change();
  await observer.callEnd('call');
  await observer.close();
  return begun.checkpointId;
}


/** A backend whose calls fail from the `failAt`th on, as a cut network does. */
function cutAfter(backend: StoreBackend, failAt: number): StoreBackend {
  let calls = 0;
  return interceptBackend(backend, () => {
    calls += 1;
    if (calls >= failAt) throw new CheckpointError('REMOTE_UNAVAILABLE', 'the network is gone', { found: 'unreachable' });
  });
}

describe('push and pull between two clones', () => {
  it('turns taken on one machine are listed, diffed and undone on a clone at another path, byte for byte', async () => {
    const { base, a, b } = await twoClones();
    expect(b.workspace).toEqual(a.workspace);
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    const before = await listing(a.project);
    // A budget of two files: the first picture leaves the tracked files resting on git's
    // objects, which the push must carry (the remote does not depend on one clone's git).
    const first = await turn(a, async () => {
      await fs.writeFile(path.join(a.project, 'src/f1.txt'), 'rewritten on machine a\n');
      await fs.rm(path.join(a.project, 'src/f2.txt'));
      await fs.writeFile(path.join(a.project, 'notes.md'), 'new on machine a\n');
    }, { maxPictureFiles: 2 });
    const afterFirst = await listing(a.project);
    const second = await turn(a, async () => {
      await fs.writeFile(path.join(a.project, 'notes.md'), 'changed again\n');
      await fs.chmod(path.join(a.project, 'src/f3.txt'), 0o755);
    });
    const pushed = await pushCheckpoints(a.store, backend, a.workspace);
    expect(pushed.pushed).toEqual([first, second]);
    expect(pushed.bundles).toBeGreaterThanOrEqual(1);
    await remoteIsWhole(backend, a.workspace);
    expect((await pushCheckpoints(a.store, backend, a.workspace)).pushed).toEqual([]);

    const pulled = await pullCheckpoints(b.store, backend, b.workspace);
    expect(pulled.pulled).toEqual([first, second]);
    const listed = await b.store.list();
    expect(listed.map((m) => [m.id, m.workspace, m.sessionId])).toEqual([
      [first, b.project, 'agent-1'],
      [second, b.project, 'agent-1'],
    ]);
    const [fromA, fromB] = [await a.store.manifest(first), await b.store.manifest(first)];
    expect(fromB.entries.map((e) => [e.path, e.after])).toEqual(fromA.entries.map((e) => [e.path, e.after]));
    // What rested on machine a's git is machine b's own store object now.
    const objectsOf = (m: typeof fromA): string[] => m.entries.flatMap((e) => (e.before.type === 'file' ? [e.before.object] : []));
    expect(objectsOf(fromA).some((key) => key.startsWith('git:'))).toBe(true);
    expect(objectsOf(fromB).some((key) => key.startsWith('git:'))).toBe(false);
    expect((await pullCheckpoints(b.store, backend, b.workspace)).pulled).toEqual([]);

    // Machine b arrives where machine a is (as a rsync or the agent's own work would), then
    // undoes both turns with the same guarded engine: the tree machine a had before them.
    for (const [rel, state] of Object.entries(await listing(a.project))) {
      const [, mode, content] = state.split(':') as [string, string, string];
      await fs.mkdir(path.dirname(path.join(b.project, rel)), { recursive: true });
      await fs.writeFile(path.join(b.project, rel), Buffer.from(content, 'base64'));
      await fs.chmod(path.join(b.project, rel), Number.parseInt(mode, 8));
    }
    await fs.rm(path.join(b.project, 'src/f2.txt'), { force: true });
    const observer = new CheckpointObserver({ store: b.store, sessionId: 'person-b' });
    const undoSecond = await observer.restore(second);
    expect(undoSecond.failed).toEqual([]);
    expect(await listing(b.project)).toEqual(afterFirst);
    const undoFirst = await observer.restore(first);
    expect(undoFirst.failed).toEqual([]);
    expect(await listing(b.project)).toEqual(before);
    await observer.close();
    expect((await b.store.verify()).problems).toEqual([]);
  });

  it('a push cut off by the network at any point leaves the local store whole and the remote never naming what it lacks; the next push completes', async () => {
    await withSeed(1616, async (random) => {
      const { base, a } = await twoClones();
      const ids: CheckpointId[] = [];
      for (let i = 0; i < 4; i++) {
        ids.push(await turn(a, async () => {
          await fs.writeFile(path.join(a.project, `src/f${i}.txt`), `turn ${i}\n`.repeat(100));
          await fs.writeFile(path.join(a.project, `made-${i}.txt`), `made in turn ${i}\n`);
        }));
      }
      const localBefore = await Promise.all(ids.map((id) => a.store.manifest(id)));
      const backend = await DirectoryBackend.open(path.join(base, 'remote'));
      for (let attempt = 0; attempt < 6; attempt++) {
        const cut = cutAfter(backend, random.int(1, 8));
        const error = await pushCheckpoints(a.store, cut, a.workspace).then(() => undefined, (e: unknown) => e);
        if (error !== undefined) expect(isCheckpointError(error, 'REMOTE_UNAVAILABLE')).toBe(true);
        await remoteIsWhole(backend, a.workspace);
        expect(await Promise.all(ids.map((id) => a.store.manifest(id)))).toEqual(localBefore);
      }
      const done = await pushCheckpoints(a.store, backend, a.workspace);
      expect([...(await remoteCheckpointIds(backend, a.workspace))]).toEqual(ids);
      expect(done.alreadyThere + done.pushed.length).toBe(ids.length);
      await remoteIsWhole(backend, a.workspace);
      expect((await a.store.verify()).problems).toEqual([]);
    });
  });

  it("a push after each turn reads only the remote manifests it has not seen (another machine's), not all of them", async () => {
    const { base, a, b } = await twoClones();
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    const manifestReads: string[] = [];
    const counting = interceptBackend(backend, (method, key) => {
      if (method === 'get' && key.includes('/manifests/')) manifestReads.push(key);
    });
    for (let i = 0; i < 5; i++) {
      await turn(a, () => fs.writeFile(path.join(a.project, 'src/f0.txt'), `turn ${i}\n`));
      await pushCheckpoints(a.store, counting, a.workspace);
    }
    // Its own manifests are known: five pushes read none.
    expect(manifestReads).toEqual([]);
    const fromB = await turn(b, () => fs.writeFile(path.join(b.project, 'src/f1.txt'), 'from b\n'));
    await pushCheckpoints(b.store, backend, b.workspace);
    await turn(a, () => fs.writeFile(path.join(a.project, 'src/f0.txt'), 'turn 5\n'));
    await pushCheckpoints(a.store, counting, a.workspace);
    // Machine b's one manifest, once.
    expect(manifestReads).toEqual([`v1/${a.workspace.id}/manifests/${fromB}.json`]);
    await turn(a, () => fs.writeFile(path.join(a.project, 'src/f0.txt'), 'turn 6\n'));
    await pushCheckpoints(a.store, counting, a.workspace);
    expect(manifestReads).toHaveLength(1);
    await remoteIsWhole(backend, a.workspace);
  });

  it('a damaged bundle is refused whole: nothing of its checkpoint is added', async () => {
    const { base, a, b } = await twoClones();
    const id = await turn(a, async () => fs.writeFile(path.join(a.project, 'src/f0.txt'), 'changed\n'));
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    await pushCheckpoints(a.store, backend, a.workspace);
    for await (const entry of backend.list(`v1/${a.workspace.id}/bundles/`)) {
      const bytes = (await backend.get(entry.key)) as Buffer;
      bytes.writeUInt8((bytes.at(-1) as number) ^ 0xff, bytes.length - 1);
      await backend.put(entry.key, bytes);
    }
    const error = await pullCheckpoints(b.store, backend, b.workspace).then(() => undefined, (e: unknown) => e);
    expect(isCheckpointError(error, 'INTEGRITY')).toBe(true);
    expect(await b.store.list()).toEqual([]);
    const unknown = await b.store.manifest(id).then(() => undefined, (e: unknown) => e);
    expect(isCheckpointError(unknown, 'UNKNOWN_CHECKPOINT')).toBe(true);
  });

  it('another project (another first commit) sees none of it; a project outside git has no remote identity', async () => {
    const { base, a } = await twoClones();
    await turn(a, async () => fs.writeFile(path.join(a.project, 'README.md'), 'changed\n'));
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    await pushCheckpoints(a.store, backend, a.workspace);
    const other = path.join(base, 'other');
    await writeTree(other, { 'x.txt': 'x\n' });
    git(other, 'init', '-q');
    git(other, 'add', '-A');
    git(other, '-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'unrelated');
    const otherStore = await CheckpointStore.open(path.join(base, 'other-store'), { projectRoot: other });
    expect(await pullCheckpoints(otherStore, backend, await workspaceIdentity(other))).toEqual({ pulled: [], alreadyHere: 0, objects: 0 });
    const plain = path.join(base, 'plain');
    await fs.mkdir(plain);
    const error = await workspaceIdentity(plain).then(() => undefined, (e: unknown) => e);
    expect(isCheckpointError(error, 'INVALID_CONFIG')).toBe(true);
  });
});

describe('a pull trusts no mode a remote says (issue #27)', () => {
  /** Rewrites the one remote manifest of `workspace` through `change`, as a tampered bucket would hold it. */
  async function tamper(backend: DirectoryBackend, workspace: WorkspaceIdentity, change: (remote: { manifest: { entries: { path: string; before: { mode?: number }; afterMode?: number }[] } }) => void): Promise<void> {
    const keys: string[] = [];
    for await (const entry of backend.list(`v1/${workspace.id}/manifests/`)) keys.push(entry.key);
    expect(keys).toHaveLength(1);
    const key = keys[0] as string;
    const remote = JSON.parse(((await backend.get(key)) as Buffer).toString('utf8')) as Parameters<typeof change>[0];
    change(remote);
    await backend.put(key, Buffer.from(JSON.stringify(remote)));
  }

  for (const [what, mode, field] of [
    ['setuid and setgid', 0o6777, 'before'],
    ['sticky', 0o1644, 'before'],
    ['file-type bits', 0o100644, 'before'],
    ['setuid, as the after-mode', 0o4755, 'afterMode'],
  ] as const) {
    it(`a manifest entry with ${what} (0o${mode.toString(8)}) is refused at pull: nothing of it is added, no object lands`, async () => {
      const { base, a, b } = await twoClones();
      const id = await turn(a, async () => fs.rm(path.join(a.project, 'src/f0.txt')));
      const backend = await DirectoryBackend.open(path.join(base, 'remote'));
      await pushCheckpoints(a.store, backend, a.workspace);
      await tamper(backend, a.workspace, (remote) => {
        const entry = remote.manifest.entries.find((e) => e.path === 'src/f0.txt');
        if (entry === undefined) throw new Error('no entry for src/f0.txt');
        if (field === 'before') entry.before.mode = mode;
        else entry.afterMode = mode;
      });
      const error = await pullCheckpoints(b.store, backend, b.workspace).then(() => undefined, (e: unknown) => e);
      expect(isCheckpointError(error, 'CORRUPT_MANIFEST'), String(error)).toBe(true);
      expect((error as CheckpointError).message).toContain('src/f0.txt');
      expect(await b.store.list()).toEqual([]);
      expect(await b.store.listObjects()).toEqual([]);
      const unknown = await b.store.manifest(id).then(() => undefined, (e: unknown) => e);
      expect(isCheckpointError(unknown, 'UNKNOWN_CHECKPOINT')).toBe(true);
    });
  }

  it('a push sends no mode bit a restore would not write (a setuid file goes as 0755), and the pulled undo recreates it 0755', async () => {
    const { base, a, b } = await twoClones();
    await fs.writeFile(path.join(a.project, 'tool.sh'), '#!/bin/sh\necho tool\n');
    await fs.chmod(path.join(a.project, 'tool.sh'), 0o4755);
    const id = await turn(a, async () => fs.rm(path.join(a.project, 'tool.sh')));
    const local = (await a.store.manifest(id)).entries.find((e) => e.path === 'tool.sh');
    expect(local?.before).toMatchObject({ type: 'file', mode: 0o4755 });
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    await pushCheckpoints(a.store, backend, a.workspace);
    await tamper(backend, a.workspace, (remote) => {
      expect(remote.manifest.entries.find((e) => e.path === 'tool.sh')?.before.mode).toBe(0o755);
    });
    expect((await pullCheckpoints(b.store, backend, b.workspace)).pulled).toEqual([id]);
    const observer = new CheckpointObserver({ store: b.store, sessionId: 'person-b' });
    const undo = await observer.restore(id);
    await observer.close();
    expect(undo.failed).toEqual([]);
    expect((await fs.lstat(path.join(b.project, 'tool.sh'))).mode & 0o7777).toBe(0o755);
  });
});
