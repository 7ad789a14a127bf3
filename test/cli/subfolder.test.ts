import { spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempFolder } from '../helpers/temp.js';
import { CLI } from './harness.js';

// Outside git, a subfolder uses its project's store: the walk up stops at a turnback.toml or at a
// folder whose store exists, never at the home folder.

async function plainFolders(): Promise<{ tb(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string }; proj: string }> {
  const root = await tempFolder('turnback-plain-');
  const home = path.join(root, 'home');
  const proj = path.join(root, 'work', 'proj');
  await mkdir(home, { recursive: true });
  await mkdir(path.join(proj, 'sub', 'deeper'), { recursive: true });
  const env = { PATH: process.env.PATH, HOME: home, XDG_DATA_HOME: path.join(home, 'data'), XDG_CONFIG_HOME: path.join(home, 'config'), NO_COLOR: '1', LANG: 'C' };
  const tb = (args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } => {
    const result = spawnSync(process.execPath, ['--no-warnings', CLI, ...args], { cwd, env, encoding: 'utf8' });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  };
  return { tb, proj };
}

describe('a subfolder of a project outside git', () => {
  it('uses the store its project already has: run, list and undo from the subfolder reach the same pictures', async () => {
    const { tb, proj } = await plainFolders();
    await writeFile(path.join(proj, 'top.txt'), 'top\n');
    expect(tb(['run', '--label', 'from the top', '--', 'sh', '-c', 'echo changed > top.txt'], proj).code).toBe(0);

    const deeper = path.join(proj, 'sub', 'deeper');
    const status = tb(['status'], deeper);
    expect(status.stdout).toContain(`project: ${proj}\n`);
    expect(tb(['list'], deeper).stdout).toContain('from the top');
    expect(tb(['run', '--label', 'from below', '--', 'sh', '-c', 'echo below > here.txt'], deeper).code).toBe(0);
    expect(tb(['list'], proj).stdout).toContain('from below');
    expect(tb(['undo', '--path', path.join(proj, 'top.txt'), '--yes'], deeper).code).toBe(0);
    expect(await readFile(path.join(proj, 'top.txt'), 'utf8')).toBe('top\n');
  });

  it('a turnback.toml marks the project before any store exists; with neither, the current folder is the project', async () => {
    const { tb, proj } = await plainFolders();
    await writeFile(path.join(proj, 'turnback.toml'), '[checkpoints]\n');
    expect(tb(['status'], path.join(proj, 'sub')).stdout).toContain(`project: ${proj}\n`);

    const other = await plainFolders();
    const sub = path.join(other.proj, 'sub');
    expect(other.tb(['status'], sub).stdout).toContain(`project: ${sub}\n`);
  });
});
