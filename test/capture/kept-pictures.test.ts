import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { contentHash, loadHasher } from '../../src/core/hash.js';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { sandbox, writeTree } from '../session/helpers.js';

// The command server opens one observer per command: the next observer of a project starts from
// the pictures the last one closed with, unless another process pictured the project in between.

let project: string;
let storeDir: string;
const opened: CheckpointObserver[] = [];

beforeEach(async () => {
  ({ project, storeDir } = await sandbox());
  const files: Record<string, string> = {};
  for (let i = 0; i < 40; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
  await writeTree(project, { ...files, 'README.md': 'readme\n' });
});
afterEach(async () => {
  for (const observer of opened.splice(0)) await observer.close().catch(() => undefined);
});

/** An observer over a store whose reads of the picture documents are counted. */
async function countingObserver(sessionId: string): Promise<{ observer: CheckpointObserver; reads: string[] }> {
  const store = await CheckpointStore.open(storeDir, { projectRoot: project });
  const reads: string[] = [];
  const readState = store.readState.bind(store);
  store.readState = async (name: string) => {
    if (name === 'stat-cache' || name === 'scan-index') reads.push(name);
    return readState(name);
  };
  const observer = new CheckpointObserver({ store, sessionId });
  opened.push(observer);
  return { observer, reads };
}

/** One call that changes nothing, then close: what a served `run -- true` leaves. */
async function quietRun(sessionId: string): Promise<string[]> {
  const { observer, reads } = await countingObserver(sessionId);
  await observer.callBegin('run');
  await observer.callEnd('run');
  await observer.close();
  return reads;
}

describe('pictures kept between the observers of one process', () => {
  it('the next observer starts from what the last one closed with, and still sees every change made between them', async () => {
    expect(await quietRun('first')).toEqual(['stat-cache']);
    await fs.writeFile(path.join(project, 'src/f3.txt'), 'between the two commands\n');
    await fs.rm(path.join(project, 'src/f4.txt'));
    await fs.writeFile(path.join(project, 'src/new.txt'), 'made between\n');

    const { observer, reads } = await countingObserver('second');
    await observer.callBegin('run');
    // Nothing read back from the store: the closed observer's pictures were taken over.
    expect(reads).toEqual([]);
    await fs.writeFile(path.join(project, 'src/f3.txt'), 'during the call\n');
    await fs.writeFile(path.join(project, 'src/new.txt'), 'changed during the call\n');
    const attribution = await observer.callEnd('run');
    await loadHasher();
    const byPath = new Map(attribution.changes.map((c) => [c.path, c]));
    expect([...byPath.keys()].sort()).toEqual(['src/f3.txt', 'src/new.txt']);
    // The picture before the call holds the bytes written between the commands, not the first run's.
    for (const [rel, text] of [['src/f3.txt', 'between the two commands\n'], ['src/new.txt', 'made between\n']] as const) {
      const before = byPath.get(rel)?.before;
      expect(before?.type).toBe('file');
      expect(before?.type === 'file' ? before.hash : undefined).toBe(contentHash(Buffer.from(text)));
    }
    await observer.close();
  });

  it("another process's pictures in between send the next observer back to the store", async () => {
    await quietRun('first');
    // Another process rewrote the stat cache (documents are replaced by rename: a new identity).
    const file = path.join(storeDir, 'state', 'stat-cache.json');
    const text = await fs.readFile(file);
    await fs.writeFile(`${file}.other`, text);
    await fs.rename(`${file}.other`, file);
    expect(await quietRun('second')).toContain('stat-cache');
    // Its own close leaves the pictures again, for the one after it.
    expect(await quietRun('third')).toEqual([]);
  });

  it('two observers opened at once: one takes the pictures over, the other reads the store, and both picture the tree', async () => {
    await quietRun('first');
    await fs.writeFile(path.join(project, 'README.md'), 'changed before both\n');
    const a = await countingObserver('a');
    const b = await countingObserver('b');
    await Promise.all([a.observer.callBegin('run'), b.observer.callBegin('run')]);
    expect([a.reads.includes('stat-cache'), b.reads.includes('stat-cache')].sort()).toEqual([false, true]);
    await fs.writeFile(path.join(project, 'README.md'), 'changed during both\n');
    const [endA, endB] = await Promise.all([a.observer.callEnd('run'), b.observer.callEnd('run')]);
    for (const end of [endA, endB]) {
      expect(end.changes.map((c) => c.path)).toEqual(['README.md']);
      const before = end.changes[0]?.before;
      expect(before?.type === 'file' ? before.hash : undefined).toBe(contentHash(Buffer.from('changed before both\n')));
    }
  });
});
