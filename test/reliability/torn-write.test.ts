import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { CheckpointId } from '../../src/core/id.js';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

const CLI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

/** A turn whose write of `torn.txt` was cut short: its pre-image is kept, its after record never came. */
async function tornTurn(): Promise<{ base: string; project: string; storeDir: string; turn: CheckpointId }> {
  const { base, project, storeDir } = await sandbox();
  await writeTree(project, { 'torn.txt': 'whole original', 'fine.txt': 'fine before' });
  const observer = await openObserver(project, storeDir);
  const turn = await observer.beginTurn();
  await observer.beforeWrite('torn.txt');
  await fs.writeFile(path.join(project, 'torn.txt'), 'half writ');
  // The agent died here: no afterWrite.
  await observer.beforeWrite('fine.txt');
  await fs.writeFile(path.join(project, 'fine.txt'), 'fine after');
  await observer.afterWrite('fine.txt');
  await observer.close();
  return { base, project, storeDir, turn };
}

describe('a torn file (write cut short) is restored only when asked, by name', () => {
  it('is refused (no-post-record) by default; with force for that path it is written back, shown as forced, and undoable', async () => {
    const { project, storeDir, turn } = await tornTurn();
    const observer = await openObserver(project, storeDir);
    expect((await observer.plan(turn)).entries.map((e) => [e.path, e.action, e.reason ?? ''])).toEqual([
      ['fine.txt', 'restore', ''],
      ['torn.txt', 'refuse', 'no-post-record'],
    ]);
    const forced = await observer.plan(turn, { force: ['torn.txt'] });
    expect(forced.entries.find((e) => e.path === 'torn.txt')).toMatchObject({ action: 'restore', reason: 'forced' });
    const report = await observer.restore(turn, { force: ['torn.txt'] });
    expect(report.restored.map((e) => e.path)).toEqual(['fine.txt', 'torn.txt']);
    expect(await fs.readFile(path.join(project, 'torn.txt'), 'utf8')).toBe('whole original');
    // The torn bytes were saved first: the restore can be undone.
    await observer.restore(report.preRestoreId!);
    expect(await fs.readFile(path.join(project, 'torn.txt'), 'utf8')).toBe('half writ');
    await observer.close();
  });

  it('a repeat write whose record was lost (refused as changed outside) is written back by name too, guarded and saved first', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'twice.txt': 'the original' });
    const agent = await openObserver(project, storeDir);
    const turn = await agent.beginTurn();
    for (const text of ['first write', 'second write']) {
      await agent.beforeWrite('twice.txt');
      await fs.writeFile(path.join(project, 'twice.txt'), text);
      if (text === 'first write') await agent.afterWrite('twice.txt');
    }
    // The second write's record never came (its process was killed): the file looks changed outside.
    await agent.close();
    const observer = await openObserver(project, storeDir);
    expect((await observer.plan(turn)).entries.map((e) => [e.path, e.action, e.reason ?? ''])).toEqual([['twice.txt', 'refuse', 'changed-outside']]);
    const forced = await observer.plan(turn, { force: ['twice.txt'] });
    expect(forced.entries).toMatchObject([{ path: 'twice.txt', action: 'restore', reason: 'forced', expectedHash: forced.entries[0]?.expectedHash }]);
    // Guarded against what the plan found: a write after the plan is refused, not overwritten.
    await fs.writeFile(path.join(project, 'twice.txt'), 'a third write');
    const refused = await observer.restore(turn, { force: ['twice.txt'], expect: forced });
    expect(refused.restored).toEqual([]);
    expect(await fs.readFile(path.join(project, 'twice.txt'), 'utf8')).toBe('a third write');
    const report = await observer.restore(turn, { force: ['twice.txt'] });
    expect(report.restored.map((e) => e.path)).toEqual(['twice.txt']);
    expect(await fs.readFile(path.join(project, 'twice.txt'), 'utf8')).toBe('the original');
    await observer.restore(report.preRestoreId!);
    expect(await fs.readFile(path.join(project, 'twice.txt'), 'utf8')).toBe('a third write');
    await observer.close();
  });

  it('turnback undo --force PATH shows it as forced in the preview and restores it', async () => {
    const { base, project, storeDir } = await tornTurn();
    const env = { PATH: process.env.PATH, HOME: path.join(base, 'home'), NO_COLOR: '1' };
    await fs.mkdir(env.HOME);
    const tb = (args: string[]) => spawnSync(process.execPath, ['--no-warnings', CLI, ...args, '--store', storeDir, '--project', project], { cwd: project, env, encoding: 'utf8' });
    const plain = tb(['undo', '--dry-run']);
    expect(plain.stdout).toMatch(/skip\s+torn\.txt\s+no record of its last change/);
    const preview = tb(['undo', '--dry-run', '--force', 'torn.txt']);
    expect(preview.stdout).toMatch(/write back\s+torn\.txt\s+forced by name \(what is there now is saved first\)/);
    const done = tb(['undo', '--yes', '--force', 'torn.txt']);
    expect(done.status).toBe(0);
    expect(await fs.readFile(path.join(project, 'torn.txt'), 'utf8')).toBe('whole original');
  });
});
