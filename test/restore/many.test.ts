import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openObserver, sandbox } from '../session/helpers.js';

describe('a restore of many files', () => {
  // Long enough that planning, preflight, apply and commit each give the event loop turns
  // (every 10 ms) while other work is queued: every path must still be planned and restored once.
  it('restores 1,500 changed files in nested folders while the event loop keeps turning', async () => {
    const { project, storeDir } = await sandbox();
    const rel = (i: number): string => `pkg${i % 10}/mod${(i >> 3) % 6}/file-${i}.txt`;
    for (let i = 0; i < 1500; i++) {
      await fs.mkdir(path.dirname(path.join(project, rel(i))), { recursive: true });
      await fs.writeFile(path.join(project, rel(i)), `original ${i}\n`.repeat(20));
    }
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    for (let i = 0; i < 1500; i++) {
      const abs = path.join(project, rel(i));
      await observer.beforeWrite(abs);
      await fs.writeFile(abs, `agent ${i}\n`);
      await observer.afterWrite(abs);
    }
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 1);
    const report = await observer.restore(turn).finally(() => clearInterval(ticker));
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    expect(report.cleanupPending).toEqual([]);
    expect(report.restored).toHaveLength(1500);
    expect(new Set(report.restored.map((e) => e.path)).size).toBe(1500);
    for (const i of [0, 1, 749, 1499]) expect(await fs.readFile(path.join(project, rel(i)), 'utf8')).toBe(`original ${i}\n`.repeat(20));
    expect(ticks).toBeGreaterThan(0);
    // The restore can itself be undone.
    const undo = await observer.restore(report.preRestoreId!);
    expect(undo.restored).toHaveLength(1500);
    expect(await fs.readFile(path.join(project, rel(1499)), 'utf8')).toBe('agent 1499\n');
    await observer.close();
  }, 120_000);
});
