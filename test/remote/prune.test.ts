import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import type { StoreBackend } from '../../src/remote/backend.js';
import { DirectoryBackend } from '../../src/remote/directory-backend.js';
import { pruneRemote } from '../../src/remote/prune.js';
import { pullCheckpoints, pushCheckpoints, remoteCheckpointIds } from '../../src/remote/sync.js';
import { workspaceIdentity, type WorkspaceIdentity } from '../../src/remote/workspace-identity.js';
import { CheckpointStore } from '../../src/store/store.js';
import { tempFolder } from '../helpers/temp.js';
import { interceptBackend, project, remoteIsWhole, turn, twoMachinesPushingAndPruning } from './scenarios.js';

// Retention on the remote, and its safety beside other machines' pushes (issue #16).

async function bundleCount(backend: StoreBackend, workspace: WorkspaceIdentity): Promise<number> {
  let count = 0;
  for await (const _ of backend.list(`v1/${workspace.id}/bundles/`)) count++;
  return count;
}

describe('prune on the remote store', () => {
  it('keeps the newest checkpoints, removes the bundles only the others named (past the grace period), and no machine pushes them back', async () => {
    const base = await tempFolder('turnback-rprune-');
    const a = await project(base, 'a');
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    const ids: CheckpointId[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(await turn(a.store, () => fs.writeFile(path.join(a.project, 'a.txt'), `version ${i}\n`.repeat(50))));
      await pushCheckpoints(a.store, backend, a.workspace);
    }
    expect(await bundleCount(backend, a.workspace)).toBe(6);
    // With the default grace, the bundles nothing names any more are young: spared.
    const young = await pruneRemote(backend, a.workspace, { retain: 3, keepDays: 14 });
    expect(young.removed).toEqual(ids.slice(0, 3));
    expect([young.bundlesRemoved, young.bundlesSpared]).toEqual([0, 3]);
    const dry = await pruneRemote(backend, a.workspace, { retain: 1, keepDays: 14, graceMs: 0, dryRun: true });
    expect(dry.removed).toEqual(ids.slice(3, 5));
    expect(await remoteCheckpointIds(backend, a.workspace)).toEqual(ids.slice(3));
    const old = await pruneRemote(backend, a.workspace, { retain: 3, keepDays: 14, graceMs: 0 });
    expect(old.removed).toEqual([]);
    expect(old.bundlesRemoved).toBe(3);
    expect(old.bytesRemoved).toBeGreaterThan(0);
    await remoteIsWhole(backend, a.workspace);
    // The pruned ones stay pruned: this machine still holds them and pushes nothing back.
    const again = await pushCheckpoints(a.store, backend, a.workspace);
    expect(again.pushed).toEqual([]);
    expect(await remoteCheckpointIds(backend, a.workspace)).toEqual(ids.slice(3));
    // And another clone pulls exactly what is left.
    const clonePath = path.join(base, 'clone');
    execFileSync('git', ['clone', '-q', a.project, clonePath]);
    const clone = await CheckpointStore.open(path.join(base, 'clone-store'), { projectRoot: clonePath });
    expect((await pullCheckpoints(clone, backend, await workspaceIdentity(clonePath))).pulled).toEqual(ids.slice(3));
  });

  it('two machines pushing and pruning one bucket at once: no manifest ever names a bundle that is gone', async () => {
    const base = await tempFolder('turnback-rprune-');
    await twoMachinesPushingAndPruning(base, await DirectoryBackend.open(path.join(base, 'remote')), 150);
  });

  it('a prune in the middle of a push: the bundle the push reuses from a pruned checkpoint is young, so it stays', async () => {
    const base = await tempFolder('turnback-rprune-');
    const a = await project(base, 'a');
    const remoteRoot = path.join(base, 'remote');
    const backend = await DirectoryBackend.open(remoteRoot);
    const first = await turn(a.store, () => fs.writeFile(path.join(a.project, 'a.txt'), 'second version\n'));
    await pushCheckpoints(a.store, backend, a.workspace);
    // Every bundle so far is old (an hour and a minute).
    const old = new Date(Date.now() - 61 * 60 * 1000);
    for await (const entry of backend.list(`v1/${a.workspace.id}/bundles/`)) await fs.utimes(path.join(remoteRoot, ...entry.key.split('/')), old, old);
    // The first version comes back outside any turn; the next turn changes it again, so its
    // pre-image is the very object the first push sent: reused, not sent again.
    await fs.writeFile(path.join(a.project, 'a.txt'), 'a\n');
    await turn(a.store, () => fs.writeFile(path.join(a.project, 'a.txt'), 'third version\n'));
    const third = await turn(a.store, () => fs.writeFile(path.join(a.project, 'b.txt'), 'other\n'));
    // The push stops just before writing its manifests; meanwhile another machine prunes down to
    // one checkpoint, which removes the first push's manifest, the only one naming that bundle.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let reached!: () => void;
    const atGate = new Promise<void>((resolve) => (reached = resolve));
    const gated = interceptBackend(backend, async (method, key) => {
      if (method !== 'create' || !key.includes('/manifests/')) return;
      reached();
      await gate;
    });
    const pushing = pushCheckpoints(a.store, gated, a.workspace);
    await atGate;
    // A checkpoint newer than all of them, pushed by the other machine, so retain = 1 keeps only it.
    const otherPath = path.join(base, 'b');
    execFileSync('git', ['clone', '-q', a.project, otherPath]);
    const other = await CheckpointStore.open(path.join(base, 'b-store'), { projectRoot: otherPath });
    await turn(other, () => fs.writeFile(path.join(otherPath, 'c.txt'), 'c\n'));
    await pushCheckpoints(other, backend, await workspaceIdentity(otherPath));
    const pruned = await pruneRemote(backend, a.workspace, { retain: 1, keepDays: 14 });
    expect(pruned.removed).toContain(first);
    release();
    const pushed = await pushing;
    expect(pushed.pushed).toContain(third);
    await remoteIsWhole(backend, a.workspace);
  });

  it('bad numbers are INVALID_ARGUMENT and remove nothing', async () => {
    const base = await tempFolder('turnback-rprune-');
    const a = await project(base, 'a');
    const backend = await DirectoryBackend.open(path.join(base, 'remote'));
    await turn(a.store, () => fs.writeFile(path.join(a.project, 'a.txt'), 'x\n'));
    await pushCheckpoints(a.store, backend, a.workspace);
    for (const bad of [{ retain: 0, keepDays: 1 }, { retain: 1.5, keepDays: 1 }, { retain: 1, keepDays: 0 }, { retain: 1, keepDays: 1, graceMs: -1 }]) {
      const error = await pruneRemote(backend, a.workspace, bad).then(() => undefined, (e: unknown) => e);
      expect(isCheckpointError(error, 'INVALID_ARGUMENT'), JSON.stringify(bad)).toBe(true);
    }
    expect(await remoteCheckpointIds(backend, a.workspace)).toHaveLength(1);
  });
});
