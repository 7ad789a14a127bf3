import * as nodeFs from 'node:fs';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSavepointTool, type SavepointReport, type SavepointTool } from '../../src/tools/savepoint-tool.js';
import { SAVEPOINT_BOUNDS } from '../../src/capture/savepoint-walk.js';
import { nodeFileSystem } from '../../src/fs/file-system.js';
import { faultFs } from '../helpers/fault-fs.js';
import { listing, openObserver, sandbox, writeTree } from '../session/helpers.js';
import { expectError, open, save, setup, useSavepointTools } from './savepoint-harness.js';

// The model's savepoint tool over a real store and a real project folder: save, list, diff and
// restore, what a savepoint holds and its bounds, and a restore's safety (preflight, the SHA-256
// check, one operation at a time, abort, faults, a workspace replaced under it).

useSavepointTools();

describe('undo_savepoint: save, list, diff, restore', () => {
  it('round trip: save → change files → diff names them → restore without confirm changes nothing → with confirm the tree is back', async () => {
    const { project, tool } = await setup({ 'src/a.ts': 'a\n', 'src/b.ts': 'b\n', 'README.md': 'r\n' });
    const before = await listing(project);
    const id = await save(tool, 'before the refactor');

    await fs.writeFile(path.join(project, 'src/a.ts'), 'A changed\n');
    await fs.rm(path.join(project, 'src/b.ts'));
    await fs.writeFile(path.join(project, 'new.txt'), 'made later\n');

    const listed = await tool.execute({ action: 'list' });
    expect(listed).toMatchObject({ ok: true, action: 'list', count: 1, savepoints: [{ id, reason: 'before the refactor', truncated: false, files: 3 }] });
    const diff = await tool.execute({ action: 'diff', id });
    expect(diff).toEqual({ ok: true, action: 'diff', id, changed: ['src/a.ts'], missing: ['src/b.ts'], unchanged: 1 });
    // File contents never reach the model.
    expect(JSON.stringify(diff) + JSON.stringify(listed)).not.toMatch(/A changed|made later/);

    const changedTree = await listing(project);
    await expectError(tool.execute({ action: 'restore', id }), 'INVALID_ARGUMENT');
    expect(await listing(project)).toEqual(changedTree);

    const restored = (await tool.execute({ action: 'restore', id, confirm: true })) as Extract<SavepointReport, { action: 'restore' }>;
    expect(restored).toMatchObject({ ok: true, action: 'restore', id, restored: ['src/a.ts', 'src/b.ts'], unchanged: 1, cleanupPending: [] });
    expect(restored.preRestoreId).not.toBeNull();
    // Files created since stay; everything the savepoint names is back.
    expect(await listing(project)).toEqual({ ...before, 'new.txt': (await listing(project))['new.txt'] });
    expect((await tool.execute({ action: 'diff', id })) as object).toMatchObject({ changed: [], missing: [], unchanged: 3 });
  });

  it('an id that does not exist is an error, not an empty result; a checkpoint of another kind is no savepoint', async () => {
    const { observer, tool } = await setup({ 'a.txt': 'a\n' });
    await expectError(tool.execute({ action: 'diff', id: '00000000000000-zzzzzzzz' }), 'INVALID_ID');
    const id = await save(tool);
    const other = id.slice(0, -1) + (id.endsWith('a') ? 'b' : 'a');
    await expectError(tool.execute({ action: 'diff', id: other }), 'UNKNOWN_CHECKPOINT');
    const turn = await observer.beginTurn({ label: 'a turn' });
    await observer.close();
    const again = await openObserver(observer.projectRoot, path.join(path.dirname(observer.projectRoot), 'store'));
    const tool2 = createSavepointTool({ observer: again });
    open.push({ observer: again, tool: tool2 });
    await expectError(tool2.execute({ action: 'restore', id: turn, confirm: true }), 'UNKNOWN_CHECKPOINT');
  });

  it('holds regular files only: no symlinks, credentials, dependency or build folders, files with NUL bytes', async () => {
    const { project, tool } = await setup({
      'src/a.ts': 'a\n',
      '.env': 'SECRET=1\n',
      'id_rsa.pem': 'key\n',
      'node_modules/x/index.js': 'dep\n',
      'dist/out.js': 'built\n',
      '.git/config': 'git\n',
      'bin.dat': Buffer.from([1, 0, 2]),
    });
    await fs.symlink('src/a.ts', path.join(project, 'link.ts'));
    const id = await save(tool);
    const listed = (await tool.execute({ action: 'list' })) as Extract<SavepointReport, { action: 'list' }>;
    expect(listed.savepoints[0]).toMatchObject({ id, files: 1, truncated: false });
  });

  it('cuts a savepoint short at its bounds, and says so (truncated, also when a bound is reached exactly)', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`f${i}.txt`] = `${i}\n`;
    const exact = await setup(files, { limits: { maxFiles: 5 } });
    expect(((await exact.tool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 5, truncated: true });
    const under = await setup(files, { limits: { maxFiles: 6 } });
    expect(((await under.tool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 5, truncated: false });
    const big = await setup({ 'small.txt': 'ok\n', 'big.txt': 'x'.repeat(2048) }, { limits: { maxFileBytes: 1024 } });
    expect(((await big.tool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 1, truncated: true });
    expect(() => createSavepointTool({ observer: big.observer, limits: { maxFiles: 2001 } })).toThrow(/maxFiles/);
    expect(() => createSavepointTool({ observer: big.observer, limits: { maxFileBytes: 2 * 1024 * 1024 + 1 } })).toThrow(/maxFileBytes/);
    let deep = 'd';
    for (let i = 0; i < SAVEPOINT_BOUNDS.depth + 1; i++) deep += '/d';
    const tooDeep = await setup({ [`${deep}/x.txt`]: 'deep\n', 'top.txt': 't\n' });
    expect(((await tooDeep.tool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 1, truncated: true });
  });

  it('the per-savepoint bounds: 8 MiB of content, 8,192 folder entries, 512 folders', async () => {
    const MiB = 1024 * 1024;
    const content: Record<string, string> = {};
    for (let i = 0; i < 5; i++) content[`big${i}.txt`] = 'x'.repeat(2 * MiB - 16);
    const heavy = await setup(content, { limits: { maxFileBytes: 2 * MiB } });
    expect(((await heavy.tool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 4, truncated: true });

    const links = await sandbox();
    for (let i = 0; i < SAVEPOINT_BOUNDS.entries + 10; i++) nodeFs.symlinkSync('nowhere', path.join(links.project, `l${i}`));
    nodeFs.writeFileSync(path.join(links.project, 'zz-after.txt'), 'after the links\n');
    const linkObserver = await openObserver(links.project, links.storeDir);
    const linkTool = createSavepointTool({ observer: linkObserver });
    open.push({ observer: linkObserver, tool: linkTool });
    // Symlinks are never held but count as entries looked at: the walk stops before zz-after.txt.
    expect(((await linkTool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 0, truncated: true });

    const folders = await sandbox();
    for (let i = 0; i < SAVEPOINT_BOUNDS.folders + 5; i++) nodeFs.mkdirSync(path.join(folders.project, `d${String(i).padStart(4, '0')}`));
    nodeFs.writeFileSync(path.join(folders.project, 'd0000', 'first.txt'), 'first\n');
    nodeFs.writeFileSync(path.join(folders.project, `d${String(SAVEPOINT_BOUNDS.folders + 4).padStart(4, '0')}`, 'last.txt'), 'last\n');
    const folderObserver = await openObserver(folders.project, folders.storeDir);
    const folderTool = createSavepointTool({ observer: folderObserver });
    open.push({ observer: folderObserver, tool: folderTool });
    expect(((await folderTool.execute({ action: 'save' })) as Extract<SavepointReport, { action: 'save' }>).savepoint).toMatchObject({ files: 1, truncated: true });
  });

  it('modes: owner read and write kept, never a new exec, group-write or other-write; an executable destination keeps its bits', async () => {
    const { project, tool } = await setup({ 'run.sh': { file: '#!/bin/sh\n', mode: 0o777 }, 'notes.txt': { file: 'n\n', mode: 0o444 }, 'tool.sh': { file: 't\n', mode: 0o750 } });
    const id = await save(tool);
    await fs.rm(path.join(project, 'run.sh'));
    await fs.writeFile(path.join(project, 'notes.txt'), 'changed\n');
    await fs.writeFile(path.join(project, 'tool.sh'), 'changed\n');
    await expect(tool.execute({ action: 'restore', id, confirm: true })).resolves.toMatchObject({ ok: true });
    const mode = (rel: string) => nodeFs.statSync(path.join(project, rel)).mode & 0o777;
    expect(mode('run.sh')).toBe(0o644); // recreated: 777 recorded, no exec or group/other write granted
    expect(mode('notes.txt')).toBe(0o644); // recorded 0444: owner read and write kept
    expect(mode('tool.sh')).toBe(0o750); // already executable: its own bits stay
  });

  it('preflight: a folder standing where a file goes refuses the whole restore, and nothing is written', async () => {
    const { project, tool } = await setup({ 'a.txt': 'a\n', 'b.txt': 'b\n' });
    const id = await save(tool);
    await fs.writeFile(path.join(project, 'a.txt'), 'changed\n');
    await fs.rm(path.join(project, 'b.txt'));
    await fs.mkdir(path.join(project, 'b.txt'));
    await fs.writeFile(path.join(project, 'b.txt', 'inside'), 'keep me\n');
    const tree = await listing(project);
    const error = await expectError(tool.execute({ action: 'restore', id, confirm: true }), 'CONFLICT');
    expect(error.message).toMatch(/b\.txt/);
    expect(await listing(project)).toEqual(tree);
  });

  it('a stored copy that no longer matches its SHA-256 stops the restore before a byte is written', async () => {
    const { project, storeDir, observer, tool } = await setup({ 'a.txt': 'original\n' });
    const id = await save(tool);
    await fs.writeFile(path.join(project, 'a.txt'), 'changed\n');
    const manifest = await observer.store.manifest(id as never);
    const entry = manifest.entries[0];
    if (entry?.before.type !== 'file') throw new Error('no file entry');
    // Rewrite the manifest's recorded SHA-256 (the store's own checks pass, the savepoint's must not).
    const manifestFile = (await findFile(storeDir, `${id}.json`)) as string;
    const text = await fs.readFile(manifestFile, 'utf8');
    await fs.writeFile(manifestFile, text.replace(entry.before.sha256 as string, 'f'.repeat(64)));
    const tree = await listing(project);
    await expectError(tool.execute({ action: 'restore', id, confirm: true }), 'INTEGRITY');
    expect(await listing(project)).toEqual(tree);
  });

  it('one operation at a time per workspace: a second concurrent call is busy; a restore aborted before it starts writes nothing', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++) files[`d${i % 10}/f${i}.txt`] = `${i}\n`;
    const { project, tool } = await setup(files);
    const id = await save(tool);
    for (let i = 0; i < 200; i++) await fs.writeFile(path.join(project, `d${i % 10}/f${i}.txt`), `changed ${i}\n`);
    const changed = await listing(project);
    const first = tool.execute({ action: 'list' });
    await expectError(tool.execute({ action: 'list' }), 'STORE_BUSY');
    await first;

    const controller = new AbortController();
    controller.abort(new Error('the person pressed stop'));
    await expect(tool.execute({ action: 'restore', id, confirm: true }, { signal: controller.signal })).rejects.toThrow(/pressed stop/);
    expect(await listing(project)).toEqual(changed);

  });

  it('a restore aborted through its signal mid-way rolls back to the exact tree it found', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 60; i++) files[`d${i % 6}/f${i}.txt`] = `${i}\n`;
    const { project, storeDir } = await sandbox();
    await writeTree(project, files);
    const midway = new AbortController();
    let writes = 0;
    let armed = false;
    // The abort lands from inside the restore, after its tenth write call: deterministic, no timer.
    const counting = faultFs(nodeFileSystem, {
      before: (op) => {
        if (armed && ['rename', 'link', 'handle.write', 'handle.writeFile'].includes(op) && ++writes === 10) midway.abort(new Error('stopped mid-way'));
      },
    });
    const observer = await openObserver(project, storeDir, { fs: counting.fs });
    const tool = createSavepointTool({ observer });
    open.push({ observer, tool });
    const id = await save(tool);
    for (let i = 0; i < 60; i++) await fs.writeFile(path.join(project, `d${i % 6}/f${i}.txt`), `changed ${i}\n`);
    const changed = await listing(project);
    armed = true;
    const report = (await tool.execute({ action: 'restore', id, confirm: true }, { signal: midway.signal })) as Extract<SavepointReport, { action: 'restore' }>;
    expect(midway.signal.aborted).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.failure).toMatchObject({ code: 'ABORT_ERR', error: 'stopped mid-way' });
    expect(report.rollbackIncomplete).toBeUndefined();
    expect(await listing(project)).toEqual(changed);
  });

  it('fault matrix: one failure at any file-system call of a restore leaves the tree it found, or the savepoint whole', async () => {
    const ops = ['rename', 'link', 'open', 'unlink', 'mkdir', 'lstat', 'handle.write', 'handle.sync'] as const;
    let rolledBack = 0;
    let finished = 0;
    for (const op of ops) {
      for (let nth = 1; nth <= 6; nth++) {
        const { project, storeDir } = await sandbox();
        await writeTree(project, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'deep/new/c.txt': 'c\n', 'd.txt': 'd\n' });
        // Calls are counted from the restore's start: the nth call of `op` in it fails, once.
        let armed = false;
        let seen = 0;
        const faulty = faultFs(nodeFileSystem, {
          before: (called) => {
            if (armed && called === op && ++seen === nth) throw Object.assign(new Error(`injected EIO on ${op}`), { code: 'EIO' });
          },
        });
        const observer = await openObserver(project, storeDir, { fs: faulty.fs });
        const tool = createSavepointTool({ observer });
        open.push({ observer, tool });
        const id = await save(tool);
        const saved = await listing(project);
        await fs.writeFile(path.join(project, 'a.txt'), 'changed\n');
        await fs.rm(path.join(project, 'deep'), { recursive: true });
        await fs.writeFile(path.join(project, 'd.txt'), 'changed too\n');
        const changed = await listing(project);
        armed = true;
        let outcome: 'ok' | 'rolled back' | 'refused';
        try {
          const report = (await tool.execute({ action: 'restore', id, confirm: true })) as Extract<SavepointReport, { action: 'restore' }>;
          outcome = report.ok ? 'ok' : 'rolled back';
          if (!report.ok) expect(report.rollbackIncomplete, `${op} #${nth}`).toBeUndefined();
        } catch {
          outcome = 'refused';
        }
        const now = await listing(project);
        if (outcome === 'ok') {
          finished += 1;
          expect(now, `${op} #${nth}`).toEqual(saved);
        } else {
          rolledBack += 1;
          expect(now, `${op} #${nth}: ${outcome}`).toEqual(changed);
        }
      }
    }
    // Not vacuous: faults landed inside restores, and some restores still finished.
    expect(rolledBack).toBeGreaterThan(5);
    expect(finished).toBeGreaterThan(0);
  });

  it('disposing the tool mid-restore rolls the restore back, and later calls are refused', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 40; i++) files[`d${i % 4}/f${i}.txt`] = `${i}\n`;
    const { project, storeDir } = await sandbox();
    await writeTree(project, files);
    let armed = false;
    let writes = 0;
    let tool: SavepointTool | undefined;
    const counting = faultFs(nodeFileSystem, {
      before: (op) => {
        if (armed && ['rename', 'link', 'handle.write', 'handle.writeFile'].includes(op) && ++writes === 8) tool?.dispose();
      },
    });
    const observer = await openObserver(project, storeDir, { fs: counting.fs });
    tool = createSavepointTool({ observer });
    open.push({ observer, tool });
    const id = await save(tool);
    for (let i = 0; i < 40; i++) await fs.writeFile(path.join(project, `d${i % 4}/f${i}.txt`), `changed ${i}\n`);
    const changed = await listing(project);
    armed = true;
    const report = (await tool.execute({ action: 'restore', id, confirm: true })) as Extract<SavepointReport, { action: 'restore' }>;
    expect(report.ok).toBe(false);
    expect(report.failure?.code).toBe('CLOSED');
    expect(await listing(project)).toEqual(changed);
    await expectError(tool.execute({ action: 'list' }), 'CLOSED');
  });

  it('the workspace replaced under a restore (its folder moved away, another put at its path) rolls the restore back and writes nothing into the new one', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`d${i % 3}/f${i}.txt`] = `${i}\n`;
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, files);
    const moved = path.join(base, 'moved-away');
    let armed = false;
    let writes = 0;
    const swapping = faultFs(nodeFileSystem, {
      before: (op) => {
        if (armed && ['rename', 'link', 'handle.write', 'handle.writeFile'].includes(op) && ++writes === 6) {
          nodeFs.renameSync(project, moved);
          nodeFs.mkdirSync(project);
        }
      },
    });
    const observer = await openObserver(project, storeDir, { fs: swapping.fs });
    const tool = createSavepointTool({ observer });
    open.push({ observer, tool });
    const id = await save(tool);
    for (let i = 0; i < 30; i++) await fs.writeFile(path.join(project, `d${i % 3}/f${i}.txt`), `changed ${i}\n`);
    const changed = await listing(project);
    armed = true;
    const report = (await tool.execute({ action: 'restore', id, confirm: true })) as Extract<SavepointReport, { action: 'restore' }>;
    expect(writes).toBeGreaterThanOrEqual(6);
    expect(report.ok).toBe(false);
    // The folder the restore began in holds what it found; it is outside the project now, so the
    // restore's own temp files there are left, not removed, and each is named for inspection.
    const left = await listing(moved);
    const extra = Object.keys(left).filter((name) => !(name in changed));
    for (const name of Object.keys(changed)) expect(left[name], name).toBe(changed[name]);
    for (const name of extra) expect(name).toMatch(/\.turnback-stage-/);
    expect(extra.length).toBeGreaterThan(0);
    expect([...(report.rollbackIncomplete ?? [])].sort()).toEqual(extra.sort());
    // The new folder at the project's path got nothing.
    expect(await fs.readdir(project)).toEqual([]);
  });

  it('a rollback that itself fails is reported as incomplete, with the paths to inspect', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a\n', 'b.txt': 'b\n', 'c.txt': 'c\n' });
    let armed = false;
    let broken = false;
    let renames = 0;
    // The second publish fails; from then on every rename and unlink fails too, so the rollback cannot undo.
    const faulty = faultFs(nodeFileSystem, {
      before: (op) => {
        if (!armed) return;
        if (op === 'rename' || op === 'link') renames += 1;
        if (!broken && (op === 'rename' || op === 'link') && renames === 2) broken = true;
        if (broken && (op === 'rename' || op === 'link' || op === 'unlink')) throw Object.assign(new Error(`injected EIO on ${op}`), { code: 'EIO' });
      },
    });
    const observer = await openObserver(project, storeDir, { fs: faulty.fs });
    const tool = createSavepointTool({ observer });
    open.push({ observer, tool });
    const id = await save(tool);
    for (const name of ['a.txt', 'b.txt', 'c.txt']) await fs.writeFile(path.join(project, name), `changed ${name}\n`);
    armed = true;
    const report = (await tool.execute({ action: 'restore', id, confirm: true })) as Extract<SavepointReport, { action: 'restore' }>;
    expect(broken).toBe(true);
    expect(report.ok).toBe(false);
    expect(report.failure?.error).toMatch(/injected EIO/);
    expect(report.rollbackIncomplete?.length ?? 0).toBeGreaterThan(0);
    expect(report.cleanupPending).toEqual([]);
  });

  it("another project's store is refused, so another workspace's savepoints can be neither listed, diffed nor restored", async () => {
    const first = await setup({ 'a.txt': 'a\n' });
    const id = await save(first.tool);
    const { project: other } = await sandbox();
    await writeTree(other, { 'a.txt': 'other\n' });
    await expect(openObserver(other, first.storeDir)).rejects.toMatchObject({ code: 'FOREIGN_WORKSPACE' });
    // The first project's own tool still sees its savepoint.
    expect(await first.tool.execute({ action: 'diff', id })).toMatchObject({ unchanged: 1 });
  });

  it('a disposed tool refuses every call', async () => {
    const { tool } = await setup({ 'a.txt': 'a\n' });
    tool.dispose();
    await expectError(tool.execute({ action: 'list' }), 'CLOSED');
  });
});

async function findFile(dir: string, name: string): Promise<string | undefined> {
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const abs = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      const found = await findFile(abs, name);
      if (found !== undefined) return found;
    } else if (entry.name === name) return abs;
  }
  return undefined;
}
