import { spawn } from 'node:child_process';
import * as os from 'node:os';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { loadPictureCache } from '../../src/capture/picture-persist.js';
import { restoreScanIndex } from '../../src/capture/scan-index.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { viewOf } from '../../src/store/view.js';
import { CheckpointStore } from '../../src/store/store.js';
import { removeFolder, tempFolder } from '../helpers/temp.js';
import { ageStore, storedObject } from './helpers.js';
// @ts-expect-error: a plain ES module of the fixture, no types.
import { TOOL_FILE, TOOL_TEXT, editByCall, writeBefore } from '../fixtures/store-v2/tree.mjs';

// A store written by the code before layout version 3 (test/fixtures/store-v2, made by its
// make.mjs with that code): one-object pack records deflated and a version-1 pack index, loose
// large objects deflated, plain JSON documents, a version-1 picture base and scan index. This
// code opens it, upgrades it (only STORE.json changes), reads every format it holds, restores
// its turn byte for byte, and rewrites its records as blocks at the next prune.

const FIXTURE = fileURLToPath(new URL('../fixtures/store-v2/', import.meta.url));
const FIXTURE_PROJECT = '/tmp/tb-store-v2-fixture/project';

let root: string;
let project: string;
let storeDir: string;
let turn: CheckpointId;

/** Every file under `dir`, by relative path, with its bytes. */
async function treeOf(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (at: string): Promise<void> => {
    for (const entry of await fs.readdir(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) await walk(full);
      else files.set(path.relative(dir, full), await fs.readFile(full, 'latin1'));
    }
  };
  await walk(dir);
  return files;
}

beforeEach(async () => {
  root = await tempFolder('turnback-old-store-');
  project = path.join(root, 'project');
  storeDir = path.join(root, 'store');
  await fs.mkdir(project);
  // The tree as it was after the fixture's turn.
  writeBefore(project);
  editByCall(project);
  await fs.writeFile(path.join(project, TOOL_FILE), TOOL_TEXT);
  await fs.cp(path.join(FIXTURE, 'store'), storeDir, { recursive: true });
  // The store names its project by path: this copy's (every document of layout 2 is plain JSON).
  for (const dir of ['', 'checkpoints', 'state']) {
    for (const name of await fs.readdir(path.join(storeDir, dir))) {
      if (!name.endsWith('.json')) continue;
      const file = path.join(storeDir, dir, name);
      await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replaceAll(FIXTURE_PROJECT, project));
    }
  }
  turn = (await fs.readFile(path.join(FIXTURE, 'turn.txt'), 'utf8')).trim() as CheckpointId;
});
afterEach(async () => {
  await removeFolder(root);
});

describe('a store written by layout version 2', () => {
  it('opens (upgraded to version 3), verifies, and reads its picture base, stat cache and scan index', async () => {
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    try {
      expect(JSON.parse(await fs.readFile(path.join(storeDir, 'STORE.json'), 'utf8'))).toMatchObject({ version: 3 });
      const report = await store.verify();
      expect(report.problems).toEqual([]);
      expect(report.stats.objects).toBeGreaterThan(300);
      const cache = await loadPictureCache(store, 'stat-cache');
      expect(cache.base).toBeDefined();
      expect(cache.records.size).toBeGreaterThan(300);
      for (const record of cache.records.values()) {
        if (record.state.type === 'file') expect(await store.hasObject(record.state.object)).toBe(true);
      }
      const restored = restoreScanIndex(await store.readState('scan-index'), cache.records);
      expect(restored?.folders.size).toBeGreaterThan(10);
      expect((await store.list()).map((meta) => meta.id)).toEqual([turn]);
    } finally {
      await store.close();
    }
  });

  it("restores its turn byte for byte: pack records, a loose object, a first touch's raw pre-image", async () => {
    const before = path.join(root, 'before');
    await fs.mkdir(before);
    writeBefore(before);
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    const observer = new CheckpointObserver({ store: viewOf(store), sessionId: 'fixture' });
    try {
      const report = await observer.restore(turn);
      expect(report.failed).toEqual([]);
      expect(report.refused).toEqual([]);
      expect(report.restored.map((entry) => entry.path).sort()).toEqual(['b.txt', 'docs/big.txt', 'new.txt', 'notes.md', 'src/m0/f0.js']);
      expect(await treeOf(project)).toEqual(await treeOf(before));
    } finally {
      await observer.close();
      await store.close();
    }
  });

  /** A live process, and a presence file for it in the store as code of `layout` (none: older code) leaves one. */
  async function presenceOf(layout: number | undefined): Promise<{ pid: number; stop(): Promise<void> }> {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => undefined, 1000)'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const pid = child.pid as number;
    const doc = { pid, hostname: os.hostname(), at: new Date().toISOString(), ...(layout !== undefined ? { layout } : {}) };
    await fs.writeFile(path.join(storeDir, 'state', `presence-${pid}-0badc0de.json`), JSON.stringify(doc));
    return {
      pid,
      stop: async () => {
        child.kill('SIGKILL');
        await exited;
      },
    };
  }

  it('waits to upgrade while a process of the older code has it open: STORE_BUSY, left at version 2, upgraded once that process is gone', async () => {
    const older = await presenceOf(undefined);
    try {
      const refused = await CheckpointStore.open(storeDir, { projectRoot: project }).catch((e: unknown) => e);
      expect(isCheckpointError(refused, 'STORE_BUSY')).toBe(true);
      expect(String((refused as Error).message)).toContain(`pid ${older.pid}`);
      expect(JSON.parse(await fs.readFile(path.join(storeDir, 'STORE.json'), 'utf8'))).toMatchObject({ version: 2 });
    } finally {
      await older.stop();
    }
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    await store.close();
    expect(JSON.parse(await fs.readFile(path.join(storeDir, 'STORE.json'), 'utf8'))).toMatchObject({ version: 3 });
  });

  it('a live process of this code beside it does not hold the upgrade back', async () => {
    const current = await presenceOf(3);
    try {
      const store = await CheckpointStore.open(storeDir, { projectRoot: project });
      await store.close();
      expect(JSON.parse(await fs.readFile(path.join(storeDir, 'STORE.json'), 'utf8'))).toMatchObject({ version: 3 });
    } finally {
      await current.stop();
    }
  });

  it('a prune rewrites its one-object records as blocks, and every object still reads back', async () => {
    let store = await CheckpointStore.open(storeDir, { projectRoot: project });
    const cache = await loadPictureCache(store, 'stat-cache');
    const keys = [...cache.records.values()].flatMap((record) => (record.state.type === 'file' ? [record.state.object] : []));
    const bytes = new Map<string, Buffer>();
    for (const key of keys) bytes.set(key, await store.readObject(key));
    const packed = new Set((await store.listObjects()).flatMap((info) => (info.pack !== undefined ? [info.key] : [])));
    // A compressible one-object record (the loose objects stay loose files).
    const sample = keys.find((key) => packed.has(key) && (bytes.get(key)?.length ?? 0) > 1024) as string;
    expect((await storedObject(store, sample)).block).toBeUndefined();
    await ageStore(store);
    store = await CheckpointStore.open(storeDir, { projectRoot: project });
    try {
      await store.prune();
      expect((await storedObject(store, sample)).block).toMatchObject({ encoding: 2 });
      for (const [key, expected] of bytes) expect(Buffer.compare(await store.readObject(key), expected)).toBe(0);
      expect((await store.verify()).problems).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
