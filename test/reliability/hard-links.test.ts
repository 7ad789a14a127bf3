import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openObserver, sandbox, writeTree } from '../session/helpers.js';

describe('undo of a shell call that replaced a project file with a hard link to an outside file', () => {
  it('brings the project file back by a rename: the outside file keeps its bytes and mode; a link that existed at the picture is rewritten in place', async () => {
    const { base, project, storeDir } = await sandbox();
    await writeTree(project, { 'config.txt': 'project config', 'shared.txt': 'shared before' });
    const outside = path.join(base, 'outside');
    await writeTree(outside, { 'secret.txt': 'outside secret' });
    await fs.chmod(path.join(outside, 'secret.txt'), 0o600);
    // A link that exists before the call: it must survive the undo (both names see the old bytes).
    await fs.link(path.join(project, 'shared.txt'), path.join(outside, 'shared-twin.txt'));
    const observer = await openObserver(project, storeDir);
    const turn = await observer.beginTurn();
    await observer.callBegin('ln');
    execFileSync('sh', ['-c', `rm config.txt && ln ${JSON.stringify(path.join(outside, 'secret.txt'))} config.txt && printf 'shared after' > shared.txt`], { cwd: project });
    await observer.callEnd('ln', { sideEffect: 'filesystem' });
    const report = await observer.restore(turn);
    expect(report.restored.map((e) => e.path).sort()).toEqual(['config.txt', 'shared.txt']);
    expect(await fs.readFile(path.join(project, 'config.txt'), 'utf8')).toBe('project config');
    expect(await fs.readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('outside secret');
    expect((await fs.lstat(path.join(outside, 'secret.txt'))).mode & 0o777).toBe(0o600);
    expect(await fs.readFile(path.join(outside, 'shared-twin.txt'), 'utf8')).toBe('shared before');
    expect((await fs.lstat(path.join(project, 'shared.txt'))).ino).toBe((await fs.lstat(path.join(outside, 'shared-twin.txt'))).ino);
    await observer.close();
  });
});
