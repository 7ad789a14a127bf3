import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { serverAddress } from '../../src/server/address.js';
import { watchmanFolder } from '../../src/server/watching.js';
import { cliRepo } from './harness.js';

// The command server keeps a watcher per project (issue #28): its served pictures ask watchman
// what changed since the last one, and `status` says so. The server starts a watchman service of
// its own (beside its socket) and stops it when it leaves.

const MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli', 'main.cjs');

/** True while process `pid` lives. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the server watches the projects it serves', () => {
  it('served runs are answered from the watcher and record every change; status says watching; in-process status says off', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
    const repo = await cliRepo(files);
    // Off in the other CLI tests (the harness), on here, with watchman at our own socket.
    delete repo.env.TURNBACK_WATCHER;
    // A user's own service named in the environment is never the one asked (its cookies go in .git).
    repo.env.WATCHMAN_SOCK = path.join(repo.home, 'users-own-watchman.sock');
    const address = serverAddress(MAIN, repo.env);
    expect(address).toBeDefined();
    const serviceFolder = watchmanFolder(address?.socket ?? '');
    const gitBefore = readdirSync(path.join(repo.proj, '.git'), { recursive: true }).sort();
    // A leftover cookie at the root (a service killed mid-query) is no file of the user's.
    writeFileSync(path.join(repo.proj, '.watchman-cookie-host-9-9'), '');
    expect(repo.tb(['server', 'start']).code).toBe(0);
    let servicePid: number | undefined;
    try {
      // The watcher starts in the background with the project's first picture; until then pictures sweep.
      let status = '';
      for (let i = 0; i < 20 && !status.includes('watcher: watching'); i++) {
        expect(repo.tb(['run', '--', 'true']).code).toBe(0);
        status = repo.tb(['status']).stdout;
      }
      expect(status).toMatch(/^watcher: watching \(watchman [0-9.]+\); not verified yet$/m);
      servicePid = Number(readFileSync(path.join(serviceFolder, 'pid'), 'utf8'));
      expect(alive(servicePid)).toBe(true);
      // A change made between commands, and one made by the run's command: both recorded.
      await writeFile(path.join(repo.proj, 'src/f1.txt'), 'between runs\n');
      // The command also makes a cookie-named file at the root (as a service would): never a change of the call.
      const run = repo.tb(['run', '--', 'sh', '-c', 'echo by the command > src/f2.txt; : > .watchman-cookie-host-8-8; mkdir -p new/deep && echo made > new/deep/file.txt']);
      expect(run.code).toBe(0);
      const shown = JSON.parse(repo.tb(['show', repo.newestId(), '--json']).stdout) as { changes: { path: string }[] };
      expect(shown.changes.map((c) => c.path).sort()).toEqual(['new/deep/file.txt', 'src/f2.txt']);
      expect(repo.tb(['list', '--json']).stdout).not.toContain('watchman-cookie');
      // Nothing made in .git by the served pictures' watcher (the store's folder is outside it).
      expect(readdirSync(path.join(repo.proj, '.git'), { recursive: true }).sort()).toEqual(gitBefore);
      expect(repo.tb(['status']).stdout).toMatch(/^watcher: watching/m);
      // A command in its own process sweeps: nothing watches there.
      const off = { ...repo.env, TURNBACK_SERVER: 'off' };
      const { spawnSync } = await import('node:child_process');
      const cli = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..', 'dist', 'cli', 'turnback.cjs');
      const alone = spawnSync(process.execPath, ['--no-warnings', cli, 'status'], { cwd: repo.proj, env: off, encoding: 'utf8' });
      expect(alone.stdout).toMatch(/^watcher: off \(this process does not watch \(only the command server does\)\): every picture sweeps the whole tree$/m);
    } finally {
      repo.tb(['server', 'stop']);
    }
    // The server's watchman service went with it: waited on through watchman itself answering no more.
    expect(servicePid).toBeDefined();
    const { spawnSync } = await import('node:child_process');
    for (let i = 0; i < 5000 && alive(servicePid as number); i++) spawnSync('watchman', [`--sockname=${serviceFolder}/sock`, '--no-spawn', '--no-pretty', 'version'], { stdio: 'ignore' });
    expect(alive(servicePid as number)).toBe(false);
  }, 120_000);

  it('a command that finds no server starts one and tells it its project: the new server watches it before serving a picture, and its first served run ends on the watcher', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
    const repo = await cliRepo(files);
    delete repo.env.TURNBACK_WATCHER;
    repo.env.WATCHMAN_SOCK = path.join(repo.home, 'users-own-watchman.sock');
    try {
      // No server answers: this run pictures in its own process, starts one, and tells it the project
      // while its command runs. The command asks the new server (a served `status` only reads the
      // watcher's state; without the hint it says "starting" until a served picture asks for a
      // watcher) until it has a ready watcher for the project, and fails if that never comes.
      const waitForWatcher = 'i=0; until turnback status | grep -q "^watcher: not vouching (unknown-token: no picture taken with the watcher yet)"; do i=$((i+1)); if [ $i -ge 300 ]; then exit 3; fi; done';
      const first = repo.tb(['run', '--', 'sh', '-c', waitForWatcher]);
      expect(first.code, first.stdout + first.stderr).toBe(0);
      // The first served run finds the watcher ready: its begin settles a token, its end is answered by the watcher.
      await writeFile(path.join(repo.proj, 'src/f3.txt'), 'changed before the served run\n');
      const run = repo.tb(['run', '--', 'sh', '-c', 'echo by the command > src/f4.txt']);
      expect(run.code).toBe(0);
      expect(repo.tb(['status']).stdout).toMatch(/^watcher: watching \(watchman [0-9.]+\)/m);
      const shown = JSON.parse(repo.tb(['show', repo.newestId(), '--json']).stdout) as { changes: { path: string }[] };
      expect(shown.changes.map((c) => c.path)).toEqual(['src/f4.txt']);
    } finally {
      repo.tb(['server', 'stop']);
    }
  }, 120_000);
});
