import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DirectoryBackend } from '../../src/remote/directory-backend.js';
import { pushCheckpoints } from '../../src/remote/sync.js';
import { tempFolder } from '../helpers/temp.js';
import { project, turn } from './scenarios.js';

// A pull holds one object at a time, not its bundles: the bundles go to a scratch file of the
// store, checked against their names as they arrive, and only the objects the pull needs are read
// back (issue #31: a 300 MiB bundle cost 984 MiB). Measured in a child process of its own: before
// each read from the remote a full collection, then the buffers still alive — what the pull keeps,
// not what the collector has not got to yet.

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist');
const MIB = 1024 * 1024;

describe('a pull of large bundles', () => {
  it('keeps no bundle in memory: what it still holds before each read from the remote stays under one object, and no scratch file is left', async () => {
    const base = await tempFolder('turnback-pull-memory-');
    const a = await project(base, 'a');
    // 16 incompressible files of 8 MiB: four bundles of 32 MiB (the push's batch size).
    const files = Array.from({ length: 16 }, (_, i) => ({ name: `big/f${i}.bin`, bytes: randomBytes(8 * MIB) }));
    await fs.mkdir(path.join(a.project, 'big'));
    await turn(a.store, async () => {
      for (const file of files) await fs.writeFile(path.join(a.project, file.name), file.bytes);
    });
    await turn(a.store, async () => {
      await fs.rm(path.join(a.project, 'big'), { recursive: true });
    });
    const remote = path.join(base, 'remote');
    const pushed = await pushCheckpoints(a.store, await DirectoryBackend.open(remote), a.workspace);
    expect(pushed.bundles).toBeGreaterThanOrEqual(4);
    const bundles = (await fs.readdir(remote, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile() && entry.name.endsWith('.tbb'));
    const bundleBytes = (await Promise.all(bundles.map(async (entry) => (await fs.stat(path.join(entry.parentPath, entry.name))).size))).reduce((sum, size) => sum + size, 0);
    expect(bundleBytes).toBeGreaterThan(128 * MIB);

    // The second machine: a clone at another path, pulling in a process of its own.
    const clone = path.join(base, 'clone');
    execFileSync('git', ['clone', '-q', a.project, clone]);
    const script = path.join(base, 'pull.mjs');
    await fs.writeFile(
      script,
      `const { openStore } = await import(${JSON.stringify(pathToFileURL(path.join(DIST, 'admin.js')).href)});
      const { DirectoryBackend, pullCheckpoints, workspaceIdentity } = await import(${JSON.stringify(pathToFileURL(path.join(DIST, 'remote.js')).href)});
      const [project, store, remote] = process.argv.slice(2);
      const local = await openStore(store, { projectRoot: project });
      const inner = await DirectoryBackend.open(remote);
      // Before each read from the remote, a full collection: what is still held then is what the pull keeps.
      // Twice: V8 frees dead buffers' memory on a background sweeper, which a loaded machine starves,
      // and a full collection first finishes the sweep of the one before it.
      const collect = () => { global.gc(); global.gc(); };
      collect();
      const base = process.memoryUsage().arrayBuffers;
      let held = 0;
      const probe = () => {
        collect();
        held = Math.max(held, process.memoryUsage().arrayBuffers - base);
      };
      const backend = new Proxy(inner, {
        get(target, key) {
          const value = target[key];
          if (typeof value !== 'function') return value;
          if (key === 'get' || key === 'getStream') return (...args) => (probe(), value.apply(target, args));
          return value.bind(target);
        },
      });
      const report = await pullCheckpoints(local, backend, await workspaceIdentity(project));
      probe();
      console.log(JSON.stringify({ pulled: report.pulled.length, objects: report.objects, held }));`,
    );
    const child = spawnSync(process.execPath, ['--expose-gc', script, clone, path.join(base, 'clone-store'), remote], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    const measured = JSON.parse(child.stdout) as { pulled: number; objects: number; held: number };
    expect(measured.pulled).toBe(2);
    expect(measured.objects).toBeGreaterThanOrEqual(16);
    // Held whole, the bundles read so far stay in memory (96 MiB and more by the fourth); on disk, nothing of them does.
    expect(measured.held).toBeLessThan(16 * MIB);
    expect(await fs.readdir(path.join(base, 'clone-store', 'tmp'))).toEqual([]);
  }, 180_000);

  it('of one large object holds about one copy of it: the peak over the pull stays under twice the object', async () => {
    const base = await tempFolder('turnback-pull-one-object-');
    const a = await project(base, 'a');
    // One incompressible 48 MiB file: one object, so one bundle of 48 MiB. Before, the pull held
    // it three times (the bytes, the hasher's copy, the write's read-back): a 300 MiB one cost 966 MiB.
    const size = 48 * MIB;
    await turn(a.store, () => fs.writeFile(path.join(a.project, 'big.bin'), randomBytes(size)));
    await turn(a.store, () => fs.rm(path.join(a.project, 'big.bin')));
    const remote = path.join(base, 'remote');
    const pushed = await pushCheckpoints(a.store, await DirectoryBackend.open(remote), a.workspace);
    expect(pushed.bundles).toBe(1);
    const clone = path.join(base, 'clone');
    execFileSync('git', ['clone', '-q', a.project, clone]);
    const script = path.join(base, 'pull.mjs');
    await fs.writeFile(
      script,
      `import { readFileSync } from 'node:fs';
      const { openStore } = await import(${JSON.stringify(pathToFileURL(path.join(DIST, 'admin.js')).href)});
      const { DirectoryBackend, pullCheckpoints, workspaceIdentity } = await import(${JSON.stringify(pathToFileURL(path.join(DIST, 'remote.js')).href)});
      const [project, store, remote] = process.argv.slice(2);
      const kib = (field) => parseInt(readFileSync('/proc/self/status', 'utf8').split(String.fromCharCode(10)).find((line) => line.startsWith(field + ':')).slice(field.length + 1), 10) * 1024;
      const local = await openStore(store, { projectRoot: project });
      const backend = await DirectoryBackend.open(remote);
      const workspace = await workspaceIdentity(project);
      global.gc();
      // The high-water mark only rises: what the pull adds is the peak past the larger of the two.
      const before = kib('VmRSS');
      const floor = kib('VmHWM');
      const report = await pullCheckpoints(local, backend, workspace);
      const peak = kib('VmHWM');
      console.log(JSON.stringify({ pulled: report.pulled.length, objects: report.objects, grew: peak - Math.max(before, floor) }));`,
    );
    const child = spawnSync(process.execPath, ['--expose-gc', script, clone, path.join(base, 'clone-store'), remote], { encoding: 'utf8' });
    expect(child.status, child.stderr).toBe(0);
    const measured = JSON.parse(child.stdout) as { pulled: number; objects: number; grew: number };
    expect([measured.pulled, measured.objects]).toEqual([2, 1]);
    expect(measured.grew, `the pull grew ${(measured.grew / MIB).toFixed(1)} MiB past where it began`).toBeLessThan(2 * size);
  }, 180_000);
});
