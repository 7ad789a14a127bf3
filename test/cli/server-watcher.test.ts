import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateWatchman, type PrivateWatchman } from '../helpers/watchman.js';
import { cliRepo } from './harness.js';

// The command server keeps a watcher per project (issue #28): its served pictures ask watchman
// what changed since the last one, and `status` says so. Against a private watchman service.

let watchman: PrivateWatchman;
beforeAll(async () => {
  watchman = await startPrivateWatchman();
});
afterAll(async () => {
  await watchman?.stop();
});

describe('the server watches the projects it serves', () => {
  it('served runs are answered from the watcher and record every change; status says watching; in-process status says off', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 30; i++) files[`src/f${i}.txt`] = `file ${i}\n`;
    const repo = await cliRepo(files);
    // Off in the other CLI tests (the harness), on here, with watchman at our own socket.
    delete repo.env.TURNBACK_WATCHER;
    repo.env.WATCHMAN_SOCK = watchman.sockname;
    expect(repo.tb(['server', 'start']).code).toBe(0);
    try {
      // The watcher starts in the background with the project's first picture; until then pictures sweep.
      let status = '';
      for (let i = 0; i < 20 && !status.includes('watcher: watching'); i++) {
        expect(repo.tb(['run', '--', 'true']).code).toBe(0);
        status = repo.tb(['status']).stdout;
      }
      expect(status).toMatch(/^watcher: watching \(watchman [0-9.]+\); not verified yet$/m);
      // A change made between commands, and one made by the run's command: both recorded.
      await writeFile(path.join(repo.proj, 'src/f1.txt'), 'between runs\n');
      const run = repo.tb(['run', '--', 'sh', '-c', 'echo by the command > src/f2.txt; mkdir -p new/deep && echo made > new/deep/file.txt']);
      expect(run.code).toBe(0);
      const shown = JSON.parse(repo.tb(['show', repo.newestId(), '--json']).stdout) as { changes: { path: string }[] };
      expect(shown.changes.map((c) => c.path).sort()).toEqual(['new/deep/file.txt', 'src/f2.txt']);
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
  }, 120_000);
});
