import { spawn } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CheckpointStore } from '../../src/store/store.js';
import { CheckpointObserver } from '../../src/session/observer.js';
import { withSeed } from '../helpers/seed.js';
import { sandbox, writeTree } from './helpers.js';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/admin.js');

// The child captures (writes through the observer) and restores in a loop, and kills itself at
// the kill point it is given: `ticks` turns of the event loop after starting step `killAt` (a
// step is one beginTurn, beforeWrite, file write, afterWrite or restore), so the kill lands inside
// that step's I/O. Kill points come from a seeded generator: a failure replays with its seed.
const CHILD = `
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
const { openStore, openObserver } = await import(process.env.TURNBACK_DIST);
const [project, storeDir, killAt, ticks] = process.argv.slice(2).map((v, i) => (i < 2 ? v : Number(v)));
let step = 0;
const at = (op) => {
  step += 1;
  if (step === killAt) {
    let n = 0;
    const tick = () => (++n >= ticks ? process.kill(process.pid, 'SIGKILL') : setImmediate(tick));
    setImmediate(tick);
  }
  return op();
};
const store = await openStore(storeDir, { projectRoot: project });
const observer = openObserver(store, { sessionId: 'child' });
for (let round = 0; ; round++) {
  const turn = await at(() => observer.beginTurn({ label: 'round ' + round }));
  for (let i = 0; i < 20; i++) {
    const rel = 'f' + (i % 7) + '.txt';
    await at(() => observer.beforeWrite(rel));
    await at(() => fs.writeFile(path.join(project, rel), 'round ' + round + ' write ' + i + ' ' + 'x'.repeat(i * 100)));
    await at(() => observer.afterWrite(rel));
  }
  await at(() => observer.restore(turn));
}
`;

/** Runs the child until it kills itself at step `killAt`, `ticks` event-loop turns in. */
async function runUntilKilled(script: string, project: string, storeDir: string, killAt: number, ticks: number): Promise<void> {
  const child = spawn(process.execPath, [script, project, storeDir, String(killAt), String(ticks)], { env: { ...process.env, TURNBACK_DIST: DIST }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.once('exit', (c, s) => resolve([c, s])));
  if (signal !== 'SIGKILL') throw new Error(`child exited on its own (${String(code)}) before step ${killAt}: ${stderr}`);
}

describe('crash safety', () => {
  it('a process killed at seeded random points while capturing and restoring leaves a store that verifies, and a second restore completes', () =>
    withSeed(20261201, async (random) => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`f${i}.txt`, `original ${i}`])));
    const script = path.join(base, 'child.mjs');
    await fs.writeFile(script, CHILD);
    // Steps 1-62 are the first round; later ones reach further rounds and their restores.
    const points = Array.from({ length: 6 }, () => ({ killAt: random.int(1, 200), ticks: random.int(0, 30) }));
    for (const { killAt, ticks } of points) {
      await runUntilKilled(script, project, storeDir, killAt, ticks);
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
  }));
});
