import { spawn } from 'node:child_process';
import { beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { loadHasher } from '../../src/core/hash.js';
import type { ObjectStore } from '../../src/store/objects.js';
import { loadPackHasher, type PackFile } from '../../src/store/packs.js';
import type { CheckpointStore } from '../../src/store/store.js';
import { incompressibleBytes, openStore, storeBundlePerFile, storePerTest, type Sandbox } from './helpers.js';

// A store's pack index handed from one open to the next in the process (the command server opens
// the store per command), and never served stale when another process removed or rewrote a pack.

let box: Sandbox;
let store: CheckpointStore;
// The real store code, bundled once for the other processes.
const bundled = storeBundlePerFile();

beforeAll(async () => {
  await Promise.all([loadHasher(), loadPackHasher()]);
});
const fixture = storePerTest();
beforeEach(() => {
  ({ box, store } = fixture);
});

const bytesFor = incompressibleBytes;

describe('the pack index between opens', () => {
  test("a second open in the process takes the last open's pack index over; a pack another process removed or rewrote is loaded again, never served from it", async () => {
    // Another process (as a `TURNBACK_SERVER=off` command would): `prune` removes every
    // unreferenced pack; `rewrite <name>` stores one object and moves its pack and index over
    // `<name>`'s (the index then names another pack: the pack is scanned).
    const other = (action: string, ...rest: string[]): Promise<string> => {
      const script = `
        const { CheckpointStore } = require(${JSON.stringify(bundled.path)});
        const fs = require('node:fs');
        const path = require('node:path');
        (async () => {
          const [storeRoot, projectRoot, action, name] = process.argv.slice(1);
          const store = await CheckpointStore.open(storeRoot, { projectRoot });
          if (action === 'prune') await store.prune({ retain: 0, graceMs: 0 });
          let object = '';
          if (action === 'rewrite') {
            const dir = path.join(storeRoot, 'objects', 'packs');
            const before = new Set(fs.readdirSync(dir));
            object = (await store.putBytes(Buffer.from('the rewritten pack holds this'))).object;
            await store.close();
            const made = fs.readdirSync(dir).filter((n) => n.endsWith('.pack') && !before.has(n));
            fs.renameSync(path.join(dir, made[0]), path.join(dir, name));
            fs.renameSync(path.join(dir, made[0].replace(/\\.pack$/, '.idx')), path.join(dir, name.replace(/\\.pack$/, '.idx')));
          }
          await store.close();
          process.stdout.write(object);
        })().catch((e) => { console.error(e); process.exit(1); });
      `;
      return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['-e', script, box.storeRoot, box.project, action, ...rest], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${String(code)}`))));
      });
    };
    const packsOf = (s: CheckpointStore): Promise<PackFile[]> => (s as unknown as { objects: ObjectStore }).objects.packFiles();
    const kept = await store.putBytes(bytesFor(1, 3000));
    const [pack] = await packsOf(store);
    await store.close();
    // Taken over: the same pack as this process knew it, not indexed again.
    const second = await openStore(box);
    expect(await packsOf(second)).toEqual([pack]);
    expect((await packsOf(second))[0]).toBe(pack);
    expect(Buffer.compare(await second.readObject(kept.object), bytesFor(1, 3000))).toBe(0);
    await second.close();
    // Rewritten in place by another process: loaded again, the old records gone with the old file.
    const rewritten = await other('rewrite', (pack as PackFile).name);
    const third = await openStore(box);
    expect((await packsOf(third))[0]).not.toBe(pack);
    expect(await third.hasObject(kept.object)).toBe(false);
    expect(await third.readObject(rewritten)).toEqual(Buffer.from('the rewritten pack holds this'));
    await third.close();
    // Removed by another process's prune: forgotten.
    await other('prune');
    const fourth = await openStore(box);
    expect(await fourth.hasObject(rewritten)).toBe(false);
    expect(await packsOf(fourth)).toEqual([]);
    await fourth.close();
  });

});
