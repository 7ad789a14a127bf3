import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
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
    (async () => {
      const [storeRoot, projectRoot, seed] = process.argv.slice(2);
      const store = await CheckpointStore.open(storeRoot, { projectRoot });
      let n = Number(seed) * 100000;
      let announced = false;
      for (;;) {
        const writer = await store.openCheckpoint({ kind: 'turn', label: 'crash' });
        for (let i = 0; i < 5; i++) {
          n += 1;
          const size = 200 + (n % 7) * 700;
          const bytes = Buffer.alloc(size, String(n));
          const ref = await store.putBytes(bytes);
          await writer.append({ op: 'before', path: 'f' + (n % 13) + '.txt', state: { type: 'file', ...ref, mode: 420 } });
          await writer.append({ op: 'after', path: 'f' + (n % 13) + '.txt', after: 'file:' + ref.hash });
        }
        if (n % 3 === 0) await writer.close(); else await writer.seal();
        if (!announced) { announced = true; process.stdout.write('running\\n'); }
      }
    })().catch((e) => { console.error(e); process.exit(1); });
  `,
  );
});

afterAll(async () => {
  await box.cleanup();
});

function runAndKill(seed: number, delayMs: number): Promise<void> {
  const child = spawn(process.execPath, [childScript, box.storeRoot, box.project, String(seed)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited on its own: ${String(code)}`))));
    child.stdout.once('data', () => setTimeout(() => child.kill('SIGKILL'), delayMs));
  });
}

describe('crash safety', () => {
  test('SIGKILLed writers leave a store that verifies and prunes clean', async () => {
    for (let i = 0; i < 6; i++) await runAndKill(i, 5 + Math.floor(Math.random() * 120));
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
  });
});
