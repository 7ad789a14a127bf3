import { execFileSync } from 'node:child_process';
import { mkdir, readFile, readdir, realpath, rename, stat, symlink, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { isCheckpointError } from '../../src/core/errors.js';
import { nodeFileSystem, type FileSystem, type SyncFileSystem } from '../../src/fs/file-system.js';
import { CheckpointStore, DEFAULT_RETAIN } from '../../src/store/store.js';
import { SYNC_READ_BYTES } from '../../src/store/state-documents.js';
import { makeSandbox, openStore, type Sandbox } from './helpers.js';

let box: Sandbox;

beforeEach(async () => {
  box = await makeSandbox();
});
afterEach(async () => {
  await box.cleanup();
});

describe('layout', () => {
  test('creates the versioned layout with owner-only modes', async () => {
    const store = await openStore(box);
    expect(store.projectRoot).toBe(await realpath(box.project));
    expect(JSON.parse(await readFile(path.join(store.root, 'STORE.json'), 'utf8'))).toEqual({
      format: 'turnback-store',
      version: 3,
      projectRoot: store.projectRoot,
    });
    for (const dir of ['', 'objects', 'objects/v1', 'objects/packs', 'checkpoints', 'state', 'tmp']) {
      expect((await stat(path.join(store.root, dir))).mode & 0o777).toBe(0o700);
    }
    expect((await stat(path.join(store.root, 'STORE.json'))).mode & 0o777).toBe(0o600);
    const writer = await store.openCheckpoint({ kind: 'turn' });
    expect((await stat(path.join(store.root, 'checkpoints', `${writer.id}.journal`))).mode & 0o777).toBe(0o600);
    await writer.seal();
    expect((await stat(path.join(store.root, 'checkpoints', `${writer.id}.json`))).mode & 0o777).toBe(0o600);
    await store.writeState('stat-cache', { a: 1 });
    expect((await stat(path.join(store.root, 'state', 'stat-cache.json'))).mode & 0o777).toBe(0o600);
    expect(DEFAULT_RETAIN).toBe(100);
    // Reopening is fine.
    await expect(openStore(box)).resolves.toBeInstanceOf(CheckpointStore);
    await store.close();
  });

  test('refuses a symlinked store root, a file as root, and a root inside .git', async () => {
    const real = path.join(box.dir, 'real');
    await mkdir(real);
    await symlink(real, box.storeRoot);
    await expect(openStore(box)).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    const file = path.join(box.dir, 'file');
    await writeFile(file, 'x');
    await expect(CheckpointStore.open(file, { projectRoot: box.project })).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    const inGit = path.join(box.project, '.git', 'turnback');
    await expect(CheckpointStore.open(inGit, { projectRoot: box.project })).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    await expect(stat(path.join(box.project, '.git'))).rejects.toThrow();
  });

  test('upgrades a version-1 store in place; its loose objects stay readable and dedupe', async () => {
    const { loadHasher, contentHash } = await import('../../src/core/hash.js');
    await loadHasher();
    await mkdir(box.storeRoot, { recursive: true });
    const projectRoot = await realpath(box.project);
    await writeFile(path.join(box.storeRoot, 'STORE.json'), JSON.stringify({ format: 'turnback-store', version: 1, projectRoot }));
    const bytes = Buffer.from('written by layout version 1');
    const key = `${contentHash(bytes)}-${bytes.length.toString(16)}`;
    await mkdir(path.join(box.storeRoot, 'objects', 'v1', key.slice(0, 2)), { recursive: true });
    await writeFile(path.join(box.storeRoot, 'objects', 'v1', key.slice(0, 2), key), Buffer.concat([Buffer.of(0), bytes]));
    const store = await openStore(box);
    expect(JSON.parse(await readFile(path.join(store.root, 'STORE.json'), 'utf8'))).toMatchObject({ version: 3 });
    expect(Buffer.compare(await store.readObject(key), bytes)).toBe(0);
    expect(await store.hasObject(key)).toBe(true);
    // The same bytes put again find the loose copy (a fresh one: no second copy is written).
    expect((await store.putBytes(bytes)).object).toBe(key);
    expect((await store.listObjects()).filter((info) => info.key === key)).toHaveLength(1);
    expect((await store.verify()).problems).toEqual([]);
    await store.close();
    // A version this code does not know is refused, never rewritten.
    await writeFile(path.join(box.storeRoot, 'STORE.json'), JSON.stringify({ format: 'turnback-store', version: 4, projectRoot }));
    await expect(openStore(box)).rejects.toSatisfy((e) => isCheckpointError(e, 'STORE_UNAVAILABLE'));
    expect(JSON.parse(await readFile(path.join(box.storeRoot, 'STORE.json'), 'utf8'))).toMatchObject({ version: 4 });
  });

  test('refuses another project store with FOREIGN_WORKSPACE', async () => {
    const first = await openStore(box);
    await first.close();
    const other = path.join(box.dir, 'other');
    await mkdir(other);
    const error = await CheckpointStore.open(box.storeRoot, { projectRoot: other }).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'FOREIGN_WORKSPACE')).toBe(true);
  });

  test('state documents: atomic JSON, validated names', async () => {
    const store = await openStore(box);
    expect(await store.readState('sessions')).toBeUndefined();
    await store.writeState('sessions', { list: [1, 2] });
    expect(await store.readState('sessions')).toEqual({ list: [1, 2] });
    await store.writeState('call-a', null);
    await store.writeState('call-b', 1);
    expect(await store.listState('call-')).toEqual(['call-a', 'call-b']);
    expect(await store.listState()).toEqual(['call-a', 'call-b', 'sessions']);
    await expect(store.readState('../x')).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await expect(store.writeState('A/b', 1)).rejects.toSatisfy((e) => isCheckpointError(e, 'INVALID_ARGUMENT'));
    await writeFile(path.join(store.root, 'state', 'bad.json'), '{');
    await expect(store.readState('bad')).rejects.toSatisfy((e) => isCheckpointError(e, 'CORRUPT_MANIFEST'));
  });

  test('durable: false replaces a document whole, owner-only, through tmp/, on the sync and the promise path', async () => {
    const { sync: _sync, ...promiseOnly } = nodeFileSystem;
    for (const fs of [nodeFileSystem, promiseOnly]) {
      const store = await CheckpointStore.open(box.storeRoot, { projectRoot: box.project, fs });
      await store.writeState('stat-cache', { round: 1 }, { durable: false });
      await store.writeState('stat-cache', { round: 2, text: 'ü'.repeat(100_000) }, { durable: false });
      expect(await store.readState('stat-cache')).toEqual({ round: 2, text: 'ü'.repeat(100_000) });
      expect((await stat(path.join(store.root, 'state', 'stat-cache.json'))).mode & 0o777).toBe(0o600);
      expect(await readdir(path.join(store.root, 'tmp'))).toEqual([]);
      await store.close();
    }
  });

  test('state documents read the same on the sync and the promise path, small or past SYNC_READ_BYTES, and a FIFO or a folder in state/ never hangs a read', async () => {
    const { sync: _sync, ...promiseOnly } = nodeFileSystem;
    let syncOpens = 0;
    const counting: FileSystem = {
      ...nodeFileSystem,
      sync: {
        ...(nodeFileSystem.sync as SyncFileSystem),
        openSync: ((...args: Parameters<SyncFileSystem['openSync']>) => {
          syncOpens += 1;
          return (nodeFileSystem.sync as SyncFileSystem).openSync(...args);
        }) as SyncFileSystem['openSync'],
      },
    };
    const small = { calls: ['a', 'b'], text: 'ü'.repeat(100) };
    // Past the sync read's limit as plain JSON (incompressible) and as a compressed document.
    const noise = Array.from({ length: SYNC_READ_BYTES / 8 }, (_, i) => ((i * 2654435761) >>> 0).toString(36)).join('');
    const big = { noise };
    for (const fs of [counting, promiseOnly]) {
      const store = await CheckpointStore.open(box.storeRoot, { projectRoot: box.project, fs });
      await store.writeState('call-small', small, { durable: false });
      await store.writeState('call-big', big);
      await writeFile(path.join(store.root, 'state', 'plain-big.json'), JSON.stringify(big));
      syncOpens = 0;
      expect(await store.readState('call-small')).toEqual(small);
      expect(await store.readState('call-big')).toEqual(big);
      expect(await store.readState('plain-big')).toEqual(big);
      expect(await store.readState('absent')).toBeUndefined();
      expect(await store.listState('call-')).toEqual(['call-big', 'call-small']);
      // The sync path opened each present document once, and read the big ones through the pool.
      if (fs === counting) expect(syncOpens).toBe(4);
      await store.close();
    }
    const store = await CheckpointStore.open(box.storeRoot, { projectRoot: box.project, fs: nodeFileSystem });
    execFileSync('mkfifo', [path.join(store.root, 'state', 'fifo.json')]);
    await mkdir(path.join(store.root, 'state', 'folder.json'));
    await expect(store.readState('fifo')).rejects.toSatisfy((e) => isCheckpointError(e));
    await expect(store.readState('folder')).rejects.toSatisfy((e) => isCheckpointError(e));
    await store.close();
  });

  test('a quick state write that fails leaves the old document and no temp file', async () => {
    let renames = 0;
    const failing: FileSystem = {
      ...nodeFileSystem,
      sync: {
        ...(nodeFileSystem.sync as SyncFileSystem),
        renameSync: () => {
          renames += 1;
          throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
        },
      },
    };
    const store = await CheckpointStore.open(box.storeRoot, { projectRoot: box.project, fs: failing });
    await store.writeState('stat-cache', { round: 1 });
    await expect(store.writeState('stat-cache', { round: 2 }, { durable: false })).rejects.toSatisfy((e) => isCheckpointError(e, 'IO'));
    expect(renames).toBe(1);
    expect(await store.readState('stat-cache')).toEqual({ round: 1 });
    expect(await readdir(path.join(store.root, 'tmp'))).toEqual([]);
    await store.close();
  });
});

describe('manifests', () => {
  test('a listing looks at each manifest on the calling thread where it can: the same list both ways, no pool stat, a manifest replaced by rename is read again, and a state document\'s identity is taken the same way', async () => {
    const { sync: _sync, ...promiseOnly } = nodeFileSystem;
    const seen = { promiseStats: 0, syncStats: 0 };
    const counting: FileSystem = {
      ...nodeFileSystem,
      stat: ((...args: Parameters<FileSystem['stat']>) => {
        seen.promiseStats += 1;
        return nodeFileSystem.stat(...args);
      }) as FileSystem['stat'],
      sync: {
        ...(nodeFileSystem.sync as SyncFileSystem),
        statSync: ((...args: Parameters<SyncFileSystem['statSync']>) => {
          seen.syncStats += 1;
          return (nodeFileSystem.sync as SyncFileSystem).statSync(...args);
        }) as SyncFileSystem['statSync'],
      },
    };
    const writing = await openStore(box);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const writer = await writing.openCheckpoint({ kind: 'turn', label: `turn ${i}` });
      await writer.append({ op: 'before', path: `f${i}`, state: { type: 'absent' } });
      ids.push((await writer.seal()).id);
    }
    const open = await writing.openCheckpoint({ kind: 'turn', label: 'still open' });
    await writing.close();
    const lists = [];
    for (const fs of [counting, promiseOnly]) {
      const store = await CheckpointStore.open(box.storeRoot, { projectRoot: box.project, fs });
      seen.promiseStats = 0;
      seen.syncStats = 0;
      const listed = await store.list();
      lists.push(listed);
      expect(listed.map((m) => m.id)).toEqual([...ids, open.id]);
      expect(listed.at(-1)?.complete).toBe(false);
      if (fs === counting) {
        // Five sealed manifests and the open checkpoint's absent one, each looked at once, none through the pool.
        expect(seen.syncStats).toBe(6);
        expect(seen.promiseStats).toBe(0);
        // Replaced by rename (a new inode): the cached manifest is not the one read now.
        const file = path.join(store.root, 'checkpoints', `${ids[0]}.json`);
        const manifest = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
        manifest.label = 'relabelled';
        await writeFile(`${file}.tmp`, JSON.stringify(manifest));
        await rename(`${file}.tmp`, file);
        expect((await store.manifest(ids[0] as string)).label).toBe('relabelled');
        expect(seen.promiseStats).toBe(0);
        manifest.label = 'turn 0';
        await writeFile(`${file}.tmp`, JSON.stringify(manifest));
        await rename(`${file}.tmp`, file);
        // A state document's identity the same way: absent, then one per write (documents are replaced by rename).
        expect(await store.stateIdentity('call-x')).toBeUndefined();
        await store.writeState('call-x', { n: 1 }, { durable: false });
        const first = await store.stateIdentity('call-x');
        await store.writeState('call-x', { n: 2 }, { durable: false });
        const second = await store.stateIdentity('call-x');
        expect(first).toBeDefined();
        expect(second).toBeDefined();
        expect(second).not.toBe(first);
        expect(seen.promiseStats).toBe(0);
      }
      await store.close();
    }
    expect(lists[0]).toEqual(lists[1]);
  });

  test('a corrupt manifest reads as CORRUPT_MANIFEST and a foreign one as FOREIGN_WORKSPACE', async () => {
    const store = await openStore(box);
    const writer = await store.openCheckpoint({ kind: 'snapshot' });
    await writer.append({ op: 'before', path: 'a', state: { type: 'absent' } });
    const sealed = await writer.seal();
    const file = path.join(store.root, 'checkpoints', `${sealed.id}.json`);
    const good = await readFile(file, 'utf8');

    await writeFile(file, good.slice(0, 30));
    await expect(store.manifest(sealed.id)).rejects.toSatisfy((e) => isCheckpointError(e, 'CORRUPT_MANIFEST'));
    const variants: ((m: Record<string, unknown>) => void)[] = [
      (m) => (m.version = 2),
      (m) => (m.format = 'other'),
      (m) => (m.entries = [{ path: '../x', before: { type: 'absent' } }]),
      (m) => (m.entries = [{ path: 'a', before: { type: 'file', object: 'zz', hash: 'x', size: 1, mode: 0 } }]),
      (m) => (m.entryCount = 5),
      (m) => (m.extra = true),
      (m) => (m.id = '0000000000001-0000-00000000'),
    ];
    for (const change of variants) {
      const manifest = JSON.parse(good) as Record<string, unknown>;
      change(manifest);
      await writeFile(file, JSON.stringify(manifest));
      await expect(store.manifest(sealed.id)).rejects.toSatisfy((e) => isCheckpointError(e, 'CORRUPT_MANIFEST'));
    }
    const foreign = JSON.parse(good) as Record<string, unknown>;
    foreign.workspace = '/somewhere/else';
    await writeFile(file, JSON.stringify(foreign));
    await expect(store.manifest(sealed.id)).rejects.toSatisfy((e) => isCheckpointError(e, 'FOREIGN_WORKSPACE'));
    // list skips what it cannot read rather than failing.
    expect(await store.list()).toEqual([]);
    await store.close();
  });
});
