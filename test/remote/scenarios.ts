import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { expect } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import type { StoreBackend } from '../../src/remote/backend.js';
import { decodeBundle } from '../../src/remote/bundle.js';
import { pruneRemote } from '../../src/remote/prune.js';
import { pullCheckpoints, pushCheckpoints, remoteCheckpointIds } from '../../src/remote/sync.js';
import { workspaceIdentity, type WorkspaceIdentity } from '../../src/remote/workspace-identity.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { withSeed } from '../helpers/seed.js';
import { writeTree } from '../helpers/temp.js';

// Scenarios the remote-store tests run against more than one backend (the directory backend,
// and the S3 backend on a real server).

const git = (cwd: string, ...args: string[]): string => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' });

/** A committed project `name` under `base`, its store, and its remote workspace. */
export async function project(base: string, name: string): Promise<{ project: string; store: CheckpointStore; workspace: WorkspaceIdentity }> {
  const root = path.join(base, name);
  await writeTree(root, { 'a.txt': 'a\n', 'b.txt': 'b\n' });
  git(root, 'init', '-q');
  git(root, 'add', '-A');
  git(root, 'commit', '-qm', 'first');
  return { project: root, store: await CheckpointStore.open(path.join(base, `${name}-store`), { projectRoot: root }), workspace: await workspaceIdentity(root) };
}

/** One sealed turn of whole-tree pictures around `change`. */
export async function turn(store: CheckpointStore, change: () => Promise<void>): Promise<CheckpointId> {
  const observer = new CheckpointObserver({ store, sessionId: 'agent' });
  const begun = await observer.callBegin('call');
  await change();
  await observer.callEnd('call');
  await observer.close();
  return begun.checkpointId;
}

/**
 * `backend` with `before(method, key)` awaited ahead of every call (`list` passes its prefix):
 * what a test needs to count calls, cut the network after some, or hold a call at a gate.
 */
export function interceptBackend(backend: StoreBackend, before: (method: string, key: string) => void | Promise<void>): StoreBackend {
  return {
    location: backend.location,
    capabilities: backend.capabilities,
    close: () => backend.close(),
    create: async (key, bytes) => (await before('create', key), backend.create(key, bytes)),
    put: async (key, bytes) => (await before('put', key), backend.put(key, bytes)),
    get: async (key) => (await before('get', key), backend.get(key)),
    getStream: async (key) => (await before('getStream', key), backend.getStream(key)),
    head: async (key) => (await before('head', key), backend.head(key)),
    touch: async (key) => (await before('touch', key), backend.touch(key)),
    delete: async (key) => (await before('delete', key), backend.delete(key)),
    list: async function* (prefix) {
      await before('list', prefix);
      yield* backend.list(prefix);
    },
  };
}

/**
 * Every manifest the remote shows names bundles that are there and hold its objects (a manifest
 * pruned between the listing and its read is skipped); returns how many manifests it checked.
 */
export async function remoteIsWhole(backend: StoreBackend, workspace: WorkspaceIdentity): Promise<number> {
  let checked = 0;
  const bundles = new Map<string, Map<string, Buffer>>();
  for (const id of await remoteCheckpointIds(backend, workspace)) {
    const text = await backend.get(`v1/${workspace.id}/manifests/${id}.json`);
    if (text === undefined) continue;
    checked += 1;
    const remote = JSON.parse(text.toString()) as { objects: Record<string, string> };
    for (const [key, bundle] of Object.entries(remote.objects)) {
      if (!bundles.has(bundle)) {
        const bytes = await backend.get(`v1/${workspace.id}/bundles/${bundle}.tbb`);
        expect(bytes, `bundle ${bundle} named by ${id}`).toBeDefined();
        bundles.set(bundle, decodeBundle(bundle, bytes as Buffer));
      }
      expect(bundles.get(bundle)?.has(key), `${key} in bundle ${bundle}`).toBe(true);
    }
  }
  return checked;
}

/**
 * Two clones of one project at once: one pushes turns, the other pushes and prunes, with content
 * that comes back, so pushes reuse bundles whose manifests prunes remove. `graceMs`: far longer
 * than a push or a prune's reading takes on this backend (the rule the grace period rests on),
 * short enough that the prunes really remove bundles while the other machine pushes.
 */
export async function twoMachinesPushingAndPruning(base: string, backend: StoreBackend, graceMs: number): Promise<void> {
  await withSeed(1617, async (random) => {
    const a = await project(base, 'a');
    const clonePath = path.join(base, 'b');
    execFileSync('git', ['clone', '-q', a.project, clonePath]);
    const b = { project: clonePath, store: await CheckpointStore.open(path.join(base, 'b-store'), { projectRoot: clonePath }), workspace: await workspaceIdentity(clonePath) };
    // Content that comes back: later pushes reuse the bundles of earlier ones, which prunes
    // keep removing the manifests of.
    const versions = ['one\n', 'two\n', 'three\n'];
    const machineA = (async () => {
      for (let i = 0; i < 12; i++) {
        await turn(a.store, () => fs.writeFile(path.join(a.project, 'a.txt'), (versions[random.int(0, 2)] as string).repeat(100)));
        await pushCheckpoints(a.store, backend, a.workspace);
      }
    })();
    let bundlesRemoved = 0;
    const machineB = (async () => {
      for (let i = 0; i < 12; i++) {
        await turn(b.store, () => fs.writeFile(path.join(b.project, 'b.txt'), (versions[random.int(0, 2)] as string).repeat(100)));
        await pushCheckpoints(b.store, backend, b.workspace);
        bundlesRemoved += (await pruneRemote(backend, b.workspace, { retain: random.int(1, 4), keepDays: 14, graceMs })).bundlesRemoved;
        await remoteIsWhole(backend, b.workspace);
      }
    })();
    await Promise.all([machineA, machineB]);
    expect(bundlesRemoved).toBeGreaterThan(0);
    await remoteIsWhole(backend, a.workspace);
    // Whatever is left pulls whole into a third clone.
    const third = path.join(base, 'c');
    execFileSync('git', ['clone', '-q', a.project, third]);
    const store = await CheckpointStore.open(path.join(base, 'c-store'), { projectRoot: third });
    const pulled = await pullCheckpoints(store, backend, await workspaceIdentity(third));
    expect(pulled.pulled.length).toBeGreaterThan(0);
    expect((await store.verify()).problems).toEqual([]);
  });
}
