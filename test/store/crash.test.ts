import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { withSeed } from '../helpers/seed.js';
import { makeSandbox, openStore, type Sandbox, bundleStore } from './helpers.js';

let box: Sandbox;
let childScript: string;

beforeAll(async () => {
  box = await makeSandbox();
  // The child runs the real store code: bundle the TypeScript source into the temp dir.
  const bundle = await bundleStore(box.dir);
  childScript = path.join(box.dir, 'writer.cjs');
  await writeFile(
    childScript,
    `
    const { CheckpointStore } = require(${JSON.stringify(bundle)});
    // Kills itself \`ticks\` event-loop turns after starting step \`killAt\` (an open, put, append,
    // seal or close), so the kill lands inside that step's I/O.
    (async () => {
      const [storeRoot, projectRoot, seed, killAt, ticks] = process.argv.slice(2);
      let step = 0;
      const at = (op) => {
        step += 1;
        if (step === Number(killAt)) {
          let n = 0;
          const tick = () => (++n >= Number(ticks) ? process.kill(process.pid, 'SIGKILL') : setImmediate(tick));
          setImmediate(tick);
        }
        return op();
      };
      const store = await CheckpointStore.open(storeRoot, { projectRoot });
      let n = Number(seed) * 100000;
      for (;;) {
        const writer = await at(() => store.openCheckpoint({ kind: 'turn', label: 'crash' }));
        for (let i = 0; i < 5; i++) {
          n += 1;
          const size = 200 + (n % 7) * 700;
          const bytes = Buffer.alloc(size, String(n));
          const ref = await at(() => store.putBytes(bytes));
          await at(() => writer.append({ op: 'before', path: 'f' + (n % 13) + '.txt', state: { type: 'file', ...ref, mode: 420 } }));
          await at(() => writer.append({ op: 'after', path: 'f' + (n % 13) + '.txt', after: 'file:' + ref.hash }));
        }
        if (n % 3 === 0) await at(() => writer.close()); else await at(() => writer.seal());
      }
    })().catch((e) => { console.error(e); process.exit(1); });
  `,
  );
});

afterAll(async () => {
  await box.cleanup();
});

function runUntilKilled(seed: number, killAt: number, ticks: number): Promise<void> {
  const child = spawn(process.execPath, [childScript, box.storeRoot, box.project, String(seed), String(killAt), String(ticks)], { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited on its own (${String(code)}) before step ${killAt}`))));
  });
}

describe('crash safety', () => {
  test('writers SIGKILLed at seeded random points leave a store that verifies and prunes clean', () =>
    withSeed(424242, async (random) => {
    // Each round of the writer is 17 steps: kill points reach a few rounds in.
    for (let i = 0; i < 6; i++) await runUntilKilled(i, random.int(2, 120), random.int(0, 20));
    const store = await openStore(box);
    const report = await store.verify();
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.stats.checkpoints).toBeGreaterThan(0);
    const metas = await store.list();
    expect(metas.length).toBe(report.stats.checkpoints);
    for (const meta of metas) {
      const manifest = await store.manifest(meta.id);
      for (const entry of manifest.entries) {
        if (entry.before.type === 'file') expect((await store.readObject(entry.before.object)).length).toBe(entry.before.size);
      }
    }
    const foreign = async (): Promise<string[]> =>
      (await readdir(path.join(store.root, 'tmp'))).filter((name) => !name.startsWith(`.turnback-${process.pid}-`));
    const packsDir = path.join(store.root, 'objects', 'packs');
    const unsealed = async (): Promise<string[]> => {
      const names = await readdir(packsDir);
      return names.filter((n) => n.endsWith('.pack') && !names.includes(n.replace(/\.pack$/, '.idx')));
    };
    // Every killed writer leaves its pack unsealed (no index): readers scanned it.
    expect((await unsealed()).length).toBeGreaterThan(0);
    // Prune seals dead writers' packs (writers are presumed alive for the grace period unless
    // their pid is dead on this host, which it is here) and removes their temp files.
    await store.prune();
    expect(await foreign()).toEqual([]);
    expect(await unsealed()).toEqual([]);
    const after = await store.verify();
    expect(after.problems).toEqual([]);
    for (const meta of await store.list()) {
      const manifest = await store.manifest(meta.id);
      for (const entry of manifest.entries) {
        if (entry.before.type === 'file') expect((await store.readObject(entry.before.object)).length).toBe(entry.before.size);
      }
    }
    await store.close();
  }));
});
