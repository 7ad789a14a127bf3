import { spawnSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, cliRepo, type CliRepo } from './harness.js';

// What one `turnback` process leaves the next: the scan index (settled folders, the hidden-tracked
// answer), and nothing else behind (no presence file). Each case runs the built command.

/** The store's state folder of `repo` (the default store under XDG_DATA_HOME). */
function stateDir(repo: CliRepo): string {
  const data = path.join(repo.home, 'data', 'turnback');
  const stores = nodeFs.readdirSync(data);
  expect(stores).toHaveLength(1);
  return path.join(data, stores[0] as string, 'state');
}

/** Sets every folder's mtime (not .git's) an hour back, so listings count as settled. */
function settleFolders(dir: string): void {
  const old = new Date(Date.now() - 3600_000);
  for (const entry of nodeFs.readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory() && entry.name !== '.git') settleFolders(path.join(dir, entry.name));
  nodeFs.utimesSync(dir, old, old);
}

describe('a fresh process starts from what the last one saw', () => {
  it('leaves no presence file behind after run, list, status, show, diff and undo --dry-run', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b >> a.txt']).code).toBe(0);
    const id = repo.newestId();
    for (const args of [['list'], ['status'], ['show', id], ['diff', id], ['undo', '--dry-run']]) expect(repo.tb(args).code, args.join(' ')).toBe(0);
    expect(nodeFs.readdirSync(stateDir(repo)).filter((name) => name.startsWith('presence-'))).toEqual([]);
  });

  it('reuses settled folders, and still sees a .gitignore edited in place (its folder keeps its mtime)', async () => {
    const repo = await cliRepo({ '.gitignore': 'gen/\n', 'src/a.ts': 'a\n' });
    nodeFs.mkdirSync(path.join(repo.proj, 'gen'));
    nodeFs.writeFileSync(path.join(repo.proj, 'gen', 'made.js'), 'made\n');
    settleFolders(repo.proj);
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(nodeFs.existsSync(path.join(stateDir(repo), 'scan-index.json'))).toBe(true);
    // The rules change in place; the project folder's mtime is put back, as an in-place write leaves it.
    const rootStat = nodeFs.statSync(repo.proj);
    nodeFs.writeFileSync(path.join(repo.proj, '.gitignore'), '# nothing ignored\n');
    nodeFs.utimesSync(repo.proj, rootStat.atime, rootStat.mtime);
    const run = repo.tb(['run', '--', 'sh', '-c', 'echo overwritten > gen/made.js']);
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).toContain('gen/made.js');
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'gen', 'made.js'), 'utf8')).toBe('made\n');
  });

  it('covers a file git starts to track between two processes, though the rules still ignore it', async () => {
    const repo = await cliRepo({ '.gitignore': 'gen/\n', 'src/a.ts': 'a\n' });
    nodeFs.mkdirSync(path.join(repo.proj, 'gen'));
    nodeFs.writeFileSync(path.join(repo.proj, 'gen', 'kept.txt'), 'kept\n');
    settleFolders(repo.proj);
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    repo.git('add', '-f', 'gen/kept.txt');
    const run = repo.tb(['run', '--', 'sh', '-c', 'echo lost > gen/kept.txt']);
    expect(run.stdout + run.stderr).toContain('gen/kept.txt');
    expect(repo.tb(['undo', '--yes']).code).toBe(0);
    expect(nodeFs.readFileSync(path.join(repo.proj, 'gen', 'kept.txt'), 'utf8')).toBe('kept\n');
  });

  it('prints no deprecation warning under --pending-deprecation (the stat fast path stays off there)', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    const result = spawnSync(process.execPath, [CLI, 'run', '--', 'sh', '-c', 'echo b >> a.txt'], { cwd: repo.proj, env: { ...repo.env, NODE_OPTIONS: '--pending-deprecation' }, encoding: 'utf8' });
    expect(result.status).toBe(0);
    expect(result.stdout + result.stderr).toContain('a.txt');
    expect(result.stderr).not.toMatch(/DEP0111|process\.binding/);
  });
});
