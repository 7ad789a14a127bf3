import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { sandbox, writeTree } from './helpers.js';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/admin.js');

// The child captures (writes through the observer) and restores in a loop until it is killed.
const CHILD = `
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
const { openStore, openObserver } = await import(process.env.TURNBACK_DIST);
const [project, storeDir] = process.argv.slice(2);
const store = await openStore(storeDir, { projectRoot: project });
const observer = openObserver(store, { sessionId: 'child' });
process.stdout.write('ready\\n');
for (let round = 0; ; round++) {
  const turn = await observer.beginTurn({ label: 'round ' + round });
  for (let i = 0; i < 20; i++) {
    const rel = 'f' + (i % 7) + '.txt';
    await observer.beforeWrite(rel);
    await fs.writeFile(path.join(project, rel), 'round ' + round + ' write ' + i + ' ' + 'x'.repeat(i * 100));
    await observer.afterWrite(rel);
  }
  await observer.restore(turn);
}
`;

async function runAndKill(script: string, project: string, storeDir: string, afterMs: number): Promise<void> {
  const child = spawn(process.execPath, [script, project, storeDir], { env: { ...process.env, TURNBACK_DIST: DIST }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`child exited early (${code}): ${stderr}`)));
  });
  await new Promise((r) => setTimeout(r, afterMs));
  child.kill('SIGKILL');
  await new Promise((r) => child.once('exit', r));
}

describe('crash safety', () => {
  it('a process killed at random points while capturing and restoring leaves a store that verifies, and a second restore completes', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`f${i}.txt`, `original ${i}`])));
    const script = path.join(base, 'child.mjs');
    await fs.writeFile(script, CHILD);
    for (let attempt = 0; attempt < 6; attempt++) {
      await runAndKill(script, project, storeDir, 30 + Math.floor(Math.random() * 250));
      const store = await CheckpointStore.open(storeDir, { projectRoot: project });
      const verified = await store.verify();
      expect(verified.problems).toEqual([]);
      expect(verified.ok).toBe(true);
    }
    // The first checkpoint ever taken goes back to the original tree, whatever the killed runs left.
    const store = await CheckpointStore.open(storeDir, { projectRoot: project });
    const first = (await store.list()).find((m) => m.kind === 'turn');
    expect(first).toBeDefined();
    const observer = new CheckpointObserver({ store, sessionId: 'after-crash' });
    const report = await observer.restore(first!.id);
    expect(report.failed).toEqual([]);
    for (const entry of report.refused) expect(entry.reason).not.toBe('changed-since-plan');
    // A restore killed mid-swap can leave staged/displaced temp files; they are never silent.
    const leftovers = (await fs.readdir(project)).filter((n) => n.startsWith('.turnback-'));
    for (const leftover of leftovers) expect(report.cleanupPending).toContain(leftover);
    // A write killed between beforeWrite and afterWrite has no post-write record: the guard refuses
    // that path (never guesses). Every other path is back to its original bytes.
    const refused = new Set(report.refused.map((e) => e.path));
    for (const entry of report.refused) expect(['no-post-record', 'changed-outside']).toContain(entry.reason);
    for (let i = 0; i < 7; i++) {
      if (!refused.has(`f${i}.txt`)) expect(await fs.readFile(path.join(project, `f${i}.txt`), 'utf8')).toBe(`original ${i}`);
    }
    await store.prune();
    expect((await store.verify()).ok).toBe(true);
  });
});
