import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, type CheckpointError } from '../../src/core/errors.js';
import type { CheckpointId } from '../../src/core/id.js';
import { observerForConfig } from '../../src/session/open.js';
import { deletePath, editFile, movePath, writeFile } from '../../src/tools/reference-tools.js';
import { listing, openObserver, sandbox, writeTree } from './helpers.js';
import { storeBehind } from '../../src/store/view.js';

async function expectCode(promise: Promise<unknown>, code: CheckpointError['code']): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isCheckpointError(error, code), `expected ${code}, got ${String(error)}`).toBe(true);
}

describe('observerForConfig', () => {
  it('returns undefined and creates nothing when disabled (the default)', async () => {
    const { base, project } = await sandbox();
    const dir = path.join(base, 'never');
    expect(await observerForConfig({}, { projectRoot: project })).toBeUndefined();
    expect(await observerForConfig(`[capabilities.checkpoint]\nenabled = false\ndir = "${dir}"`, { projectRoot: project })).toBeUndefined();
    expect(await observerForConfig({ capabilities: { checkpoint: { dir } } }, { projectRoot: project })).toBeUndefined();
    await expect(fs.access(dir)).rejects.toThrow();
    expect(await fs.readdir(base)).toEqual(['project']);
  });

  it('opens a store from TOML text, with owner-only folders', async () => {
    const { base, project } = await sandbox();
    const dir = path.join(base, 'store');
    const observer = await observerForConfig(`[capabilities.checkpoint]\nenabled = true\ndir = "${dir}"\nretain = 5`, { projectRoot: project });
    expect(observer).toBeDefined();
    expect((await fs.stat(dir)).mode & 0o777).toBe(0o700);
    await observer?.close();
  });

  it('uses $XDG_DATA_HOME/turnback/<key> by default', async () => {
    const { base, project } = await sandbox();
    const observer = await observerForConfig({ capabilities: { checkpoint: { enabled: true } } }, { projectRoot: project, env: { XDG_DATA_HOME: path.join(base, 'xdg') } });
    expect(observer?.store.root.startsWith(path.join(base, 'xdg', 'turnback', 'project-'))).toBe(true);
  });

  it('warns once and returns undefined for a store that is a symlink or unwritable', async () => {
    const { base, project } = await sandbox();
    const real = path.join(base, 'real');
    await fs.mkdir(real);
    await fs.symlink(real, path.join(base, 'linked'));
    const warnings: string[] = [];
    const onWarning = (m: string): void => void warnings.push(m);
    expect(await observerForConfig({ capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'linked') } } }, { projectRoot: project, onWarning })).toBeUndefined();
    expect(warnings).toHaveLength(1);
    const locked = path.join(base, 'locked');
    await fs.mkdir(locked, { mode: 0o500 });
    if (process.getuid?.() !== 0) {
      expect(await observerForConfig({ capabilities: { checkpoint: { enabled: true, dir: path.join(locked, 's') } } }, { projectRoot: project, onWarning })).toBeUndefined();
      expect(warnings).toHaveLength(2);
    }
    await fs.writeFile(path.join(base, 'afile'), 'x');
    expect(await observerForConfig({ capabilities: { checkpoint: { enabled: true, dir: path.join(base, 'afile', 's') } } }, { projectRoot: project, onWarning })).toBeUndefined();
    expect(warnings.length).toBeGreaterThanOrEqual(2);
  });

  it('rejects malformed config with INVALID_CONFIG before touching anything', async () => {
    const { project } = await sandbox();
    await expectCode(observerForConfig('[capabilities.checkpoint\nenabled = true', { projectRoot: project }), 'INVALID_CONFIG');
    await expectCode(observerForConfig({ capabilities: { checkpoint: { enabled: 'yes' as unknown as boolean } } }, { projectRoot: project }), 'INVALID_CONFIG');
    await expectCode(observerForConfig({ capabilities: { checkpoint: { enabled: true, retain: -1 } } }, { projectRoot: project }), 'INVALID_CONFIG');
    await expectCode(observerForConfig({ capabilities: { checkpoint: { enabeld: true } as never } }, { projectRoot: project }), 'INVALID_CONFIG');
  });
});

describe('CheckpointObserver capture and restore', () => {
  it('a write costs the same whatever the turn holds: each capture appends to the journal, nothing is rewritten', async () => {
    const { project, storeDir } = await sandbox();
    const files: Record<string, string> = {};
    for (let i = 0; i < 300; i++) files[`f${i}.txt`] = `file ${i}`;
    await writeTree(project, files);
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    const journal = path.join(storeDir, 'checkpoints', `${turn}.journal`);
    const sizes: number[] = [];
    for (let i = 0; i < 300; i++) {
      const before = (await fs.stat(journal)).size;
      await observer.beforeWrite(`f${i}.txt`);
      await fs.writeFile(path.join(project, `f${i}.txt`), `changed ${i}`);
      await observer.afterWrite(`f${i}.txt`);
      const stats = await fs.stat(journal);
      // Two lines appended, of a size that does not depend on how many came before.
      sizes.push(stats.size - before);
    }
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(16);
    await expect(fs.stat(path.join(storeDir, 'checkpoints', `${turn}.json`))).rejects.toThrow();
    await observer.close();
  });

  it('restores writes, edits, deletes and moves of one turn, byte for byte', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'alpha\n', 'src/b.ts': 'export const b = 1;\n', 'docs/c.md': '# c\n' });
    await fs.chmod(path.join(project, 'src/b.ts'), 0o640);
    const before = await listing(project);
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const turn = await observer.beginTurn({ label: 'edit things' });
    await writeFile(ctx, 'a.txt', 'ALPHA\n');
    await writeFile(ctx, 'a.txt', 'ALPHA again\n');
    await editFile(ctx, 'src/b.ts', '= 1', '= 2');
    await deletePath(ctx, 'docs/c.md');
    await movePath(ctx, 'a.txt', 'moved/a.txt');
    await writeFile(ctx, path.join(project, 'new/file.txt'), 'new');
    expect(await listing(project)).not.toEqual(before);
    const plan = await observer.plan(turn);
    expect(plan.entries.map((e) => [e.path, e.action])).toEqual([
      ['a.txt', 'recreate'],
      ['docs/c.md', 'recreate'],
      ['moved/a.txt', 'delete'],
      ['new/file.txt', 'delete'],
      ['src/b.ts', 'restore'],
    ]);
    const report = await observer.restore(turn);
    expect(report.failed).toEqual([]);
    expect(report.refused).toEqual([]);
    expect(report.restored).toHaveLength(5);
    const after = await listing(project);
    expect(after).toEqual(before);
  });

  it('restores across later turns to the earliest pre-image and leaves untouched files alone', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'f.txt': 'v0', 'keep.txt': 'keep' });
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const t1 = await observer.beginTurn();
    await writeFile(ctx, 'f.txt', 'v1');
    const t2 = await observer.beginTurn();
    await writeFile(ctx, 'f.txt', 'v2');
    await writeFile(ctx, 'g.txt', 'g2');
    await observer.beginTurn();
    await writeFile(ctx, 'f.txt', 'v3');
    await observer.restore(t2);
    expect(await fs.readFile(path.join(project, 'f.txt'), 'utf8')).toBe('v1');
    await expect(fs.access(path.join(project, 'g.txt'))).rejects.toThrow();
    await observer.restore(t1);
    expect(await fs.readFile(path.join(project, 'f.txt'), 'utf8')).toBe('v0');
    expect(await fs.readFile(path.join(project, 'keep.txt'), 'utf8')).toBe('keep');
  });

  it('refuses a file changed by someone else, restores the rest', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'mine.txt': 'm0', 'theirs.txt': 't0' });
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const turn = await observer.beginTurn();
    await writeFile(ctx, 'mine.txt', 'm1');
    await writeFile(ctx, 'theirs.txt', 't1');
    await fs.writeFile(path.join(project, 'theirs.txt'), 'edited in the editor');
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['mine.txt']);
    expect(report.refused).toMatchObject([{ path: 'theirs.txt', action: 'refuse', reason: 'changed-outside' }]);
    expect(report.refused[0]?.foundHash).not.toEqual(report.refused[0]?.expectedHash);
    expect(await fs.readFile(path.join(project, 'theirs.txt'), 'utf8')).toBe('edited in the editor');
    expect(await fs.readFile(path.join(project, 'mine.txt'), 'utf8')).toBe('m0');
  });

  it('saves what a restore overwrites, so the restore can be undone', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'original' });
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const turn = await observer.beginTurn();
    await writeFile(ctx, 'a.txt', 'agent work');
    await writeFile(ctx, 'b.txt', 'agent created');
    const report = await observer.restore(turn);
    expect(report.preRestoreId).toBeDefined();
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('original');
    const metas = await observer.store.list();
    expect(metas.find((m) => m.id === report.preRestoreId)).toMatchObject({ kind: 'pre-restore', restoreOf: turn });
    const undo = await observer.restore(report.preRestoreId as CheckpointId);
    expect(undo.failed).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('agent work');
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('agent created');
  });

  it('keeps created files with created: keep and never widens modes with never-widen', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'tool.sh': 'echo hi' });
    await fs.chmod(path.join(project, 'tool.sh'), 0o777);
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const turn = await observer.beginTurn();
    await deletePath(ctx, 'tool.sh');
    await writeFile(ctx, 'created.txt', 'new');
    const report = await observer.restore(turn, { created: 'keep', modePolicy: 'never-widen' });
    expect(report.skipped.find((e) => e.path === 'created.txt')).toMatchObject({ action: 'leave', reason: 'created-since' });
    expect(await fs.readFile(path.join(project, 'created.txt'), 'utf8')).toBe('new');
    const mode = (await fs.stat(path.join(project, 'tool.sh'))).mode & 0o777;
    expect(mode & 0o111).toBe(0);
    expect(mode & 0o022).toBe(0);
    expect(mode & 0o600).toBe(0o600);
  });

  it('restores modes exactly under the exact policy, stripping set-id bits', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'run.sh': '#!/bin/sh\n' });
    await fs.chmod(path.join(project, 'run.sh'), 0o755);
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await observer.beforeWrite('run.sh');
    await fs.chmod(path.join(project, 'run.sh'), 0o644);
    await observer.afterWrite('run.sh');
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path)).toEqual(['run.sh']);
    expect((await fs.stat(path.join(project, 'run.sh'))).mode & 0o7777).toBe(0o755);
  });

  it('restores only the given paths', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'a0', 'b.txt': 'b0' });
    const observer = await openObserver(project, storeDir);
    const ctx = { projectRoot: project, observer };
    const turn = await observer.beginTurn();
    await writeFile(ctx, 'a.txt', 'a1');
    await writeFile(ctx, 'b.txt', 'b1');
    await observer.restore(turn, { paths: [path.join(project, 'a.txt')] });
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('a0');
    expect(await fs.readFile(path.join(project, 'b.txt'), 'utf8')).toBe('b1');
  });

  it('records a symlink as a link, never following it, and restores it', async () => {
    const { base, project, storeDir } = await sandbox();
    await fs.writeFile(path.join(base, 'outside.txt'), 'outside');
    await fs.symlink(path.join(base, 'outside.txt'), path.join(project, 'link'));
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await observer.beforeWrite('link');
    await fs.unlink(path.join(project, 'link'));
    await fs.writeFile(path.join(project, 'link'), 'now a file');
    await observer.afterWrite('link');
    await observer.restore(turn);
    expect(await fs.readlink(path.join(project, 'link'))).toBe(path.join(base, 'outside.txt'));
    expect(await fs.readFile(path.join(base, 'outside.txt'), 'utf8')).toBe('outside');
  });
});

describe('bad input gets a typed error and changes nothing', () => {
  it('rejects paths outside the project, escapes, NUL, empty and non-strings', async () => {
    const { base, project, storeDir } = await sandbox();
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await expectCode(observer.beforeWrite(path.join(base, 'elsewhere.txt')), 'OUTSIDE_ROOT');
    await expectCode(observer.beforeWrite('../escape.txt'), 'OUTSIDE_ROOT');
    await expectCode(observer.beforeWrite('a\0b'), 'INVALID_PATH');
    await expectCode(observer.beforeWrite(''), 'INVALID_PATH');
    await expectCode(observer.beforeWrite(42 as unknown as string), 'INVALID_PATH');
    await expectCode(observer.beforeWrite('.git/config'), 'INVALID_PATH');
    await expectCode(writeFile({ projectRoot: project, observer }, '../x.txt', 'x'), 'OUTSIDE_ROOT');
    await expect(fs.access(path.join(base, 'x.txt'))).rejects.toThrow();
  });

  it('refuses to walk through a symlinked folder', async () => {
    const { base, project, storeDir } = await sandbox();
    await fs.mkdir(path.join(base, 'out'));
    await fs.symlink(path.join(base, 'out'), path.join(project, 'linkdir'));
    const observer = await openObserver(project, storeDir);
    await observer.beginTurn();
    await expectCode(observer.beforeWrite('linkdir/file.txt'), 'INVALID_PATH');
    await expectCode(writeFile({ projectRoot: project, observer }, 'linkdir/file.txt', 'x'), 'INVALID_PATH');
    expect(await fs.readdir(path.join(base, 'out'))).toEqual([]);
  });

  it('rejects unknown and malformed ids, and an empty paths list', async () => {
    const { project, storeDir } = await sandbox();
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await expectCode(observer.restore('nope' as CheckpointId), 'INVALID_ID');
    await expectCode(observer.plan('0000000000001-0000-deadbeef' as CheckpointId), 'UNKNOWN_CHECKPOINT');
    await expectCode(observer.restore(turn, { paths: [] }), 'INVALID_ARGUMENT');
    await expectCode(observer.restore(turn, { paths: ['../x'] }), 'OUTSIDE_ROOT');
  });

  it('rejects a manifest of another workspace', async () => {
    const { base, project, storeDir } = await sandbox();
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await writeFile({ projectRoot: project, observer }, 'a.txt', 'x');
    await observer.close();
    const manifestPath = path.join(storeDir, 'checkpoints', `${turn}.json`);
    const manifest = JSON.parse(await fs.readFile(manifestPath, 'utf8')) as { workspace: string };
    manifest.workspace = path.join(base, 'other');
    await fs.writeFile(manifestPath, JSON.stringify(manifest));
    const again = await openObserver(project, storeDir);
    await expectCode(again.restore(turn), 'FOREIGN_WORKSPACE');
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('x');
  });

  it('rejects a corrupt manifest and a tampered object without writing', async () => {
    const { project, storeDir } = await sandbox();
    await writeTree(project, { 'a.txt': 'original content that is long enough' });
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await writeFile({ projectRoot: project, observer }, 'a.txt', 'changed');
    await observer.close();
    const manifest = await observer.store.manifest(turn);
    const entry = manifest.entries[0];
    if (entry?.before.type !== 'file') throw new Error('expected a file pre-image');
    const objectKey = entry.before.object;
    // The stored copy is a loose file or a record inside a pack: flip one of its bytes.
    const stored = (await storeBehind(observer.store).listObjects()).filter((info) => info.key === objectKey);
    expect(stored).toHaveLength(1);
    const where = stored[0] as { path: string; offset?: number; diskSize: number };
    const bytes = await fs.readFile(where.path);
    const at = (where.offset ?? 0) + where.diskSize - 6;
    bytes[at] = (bytes[at] as number) ^ 0xff;
    await fs.writeFile(where.path, bytes);
    const again = await openObserver(project, storeDir);
    // A damaged copy is never written back: that path is left, reported, the file untouched.
    const report = await again.restore(turn);
    expect(report.skipped).toMatchObject([{ path: 'a.txt', action: 'leave', reason: 'object-missing' }]);
    expect(report.restored).toEqual([]);
    expect(await fs.readFile(path.join(project, 'a.txt'), 'utf8')).toBe('changed');
    await fs.writeFile(path.join(storeDir, 'checkpoints', `${turn}.json`), '{"format":');
    await expectCode(again.restore(turn), 'CORRUPT_MANIFEST');
  });
});
