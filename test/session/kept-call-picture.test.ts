import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { baselineStateName } from '../../src/capture/baseline.js';
import { isCheckpointError } from '../../src/core/errors.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { CheckpointStore } from '../../src/store/store.js';
import { openObserver, sandbox, writeTree } from './helpers.js';

// A detached call's after event in the process that began it (an agent's hooks served by one
// server, an observer per event): the before picture is taken from the process, by the baseline
// document's identity, not read back from the store's picture base; when the document is not the
// one this process wrote, the store is read, as a fresh process does.

/** A tree past the picture base's rewrite threshold (256 files): the baseline is a delta against a base. */
function bigTree(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < 300; i++) files[`src/f${String(i).padStart(3, '0')}.txt`] = `file ${i}\n`;
  return files;
}

/** Runs `fn` on an observer of its own, closed after: one hook event. */
async function event<T>(project: string, storeDir: string, fn: (o: CheckpointObserver) => Promise<T>): Promise<T> {
  const observer = await openObserver(project, storeDir, { sessionId: 'agent' });
  try {
    return await fn(observer);
  } finally {
    await observer.close();
  }
}

/** Removes the store's picture bases: a baseline that names one can then no longer be read back. */
async function removeBases(storeDir: string): Promise<number> {
  const state = path.join(storeDir, 'state');
  const bases = (await fs.readdir(state)).filter((name) => name.startsWith('pic-'));
  for (const name of bases) await fs.rm(path.join(state, name));
  return bases.length;
}

/** Writes the call's baseline again with the same contents, as another process would leave it: a new file identity. */
async function rewriteBaseline(project: string, storeDir: string): Promise<void> {
  const store = await CheckpointStore.open(storeDir, { projectRoot: project });
  try {
    const name = baselineStateName('agent', 'toolu_1');
    await store.writeState(name, await store.readState(name), { durable: false });
  } finally {
    await store.close();
  }
}

/** Turns a checkpoint's changes into what can be compared across runs. */
function shape(changes: readonly { path: string; kind: string }[]): string[] {
  return changes.map((c) => `${c.kind} ${c.path}`);
}

describe('a detached call ended by another observer of the same process', () => {
  it('takes the before picture kept in the process: the call ends and lists its change even with the picture base gone from the store', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, bigTree());
    await event(project, storeDir, (o) => o.beginTurn({ label: 'turn' }));
    await event(project, storeDir, (o) => o.callBegin('toolu_1', { command: 'edit', detached: true }));
    // Read back, the baseline would need its base: gone, so only the kept picture can end the call.
    expect(await removeBases(storeDir)).toBeGreaterThan(0);
    await fs.writeFile(path.join(project, 'src/f007.txt'), 'changed\n');
    await fs.writeFile(path.join(project, 'new.txt'), 'new\n');
    await fs.rm(path.join(project, 'src/f100.txt'));
    const attribution = await event(project, storeDir, (o) => o.callEnd('toolu_1'));
    expect(shape(attribution.changes)).toEqual(['created new.txt', 'changed src/f007.txt', 'deleted src/f100.txt']);
    expect(attribution.changes[1]?.before).toMatchObject({ type: 'file', size: 'file 7\n'.length });
  });

  it('reads the baseline back when its document is not the one this process wrote (replaced since), and gives the same changes', async () => {
    const runs: string[][] = [];
    for (const replaced of [false, true]) {
      const { project, storeDir } = await sandbox();
      await writeTree(project, bigTree());
      await event(project, storeDir, (o) => o.beginTurn({ label: 'turn' }));
      await event(project, storeDir, (o) => o.callBegin('toolu_1', { command: 'edit', detached: true }));
      if (replaced) {
        await rewriteBaseline(project, storeDir);
      }
      await fs.writeFile(path.join(project, 'src/f007.txt'), 'changed\n');
      await fs.writeFile(path.join(project, 'new.txt'), 'new\n');
      const attribution = await event(project, storeDir, (o) => o.callEnd('toolu_1'));
      runs.push(shape(attribution.changes));
    }
    expect(runs[0]).toEqual(['created new.txt', 'changed src/f007.txt']);
    expect(runs[1]).toEqual(runs[0]);
  });

  it('a replaced baseline is never taken from memory: with its picture base gone, the call cannot be read', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, bigTree());
    await event(project, storeDir, (o) => o.beginTurn({ label: 'turn' }));
    await event(project, storeDir, (o) => o.callBegin('toolu_1', { command: 'edit', detached: true }));
    await rewriteBaseline(project, storeDir);
    expect(await removeBases(storeDir)).toBeGreaterThan(0);
    const ended = await event(project, storeDir, (o) => o.callEnd('toolu_1')).then(
      () => 'ended',
      (error: unknown) => (isCheckpointError(error, 'UNKNOWN_CALL') ? 'unknown' : error),
    );
    expect(ended).toBe('unknown');
  });
});
