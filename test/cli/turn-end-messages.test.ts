import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #27, "Tried as a new user would on prettier": the turn-end list's words. A deleted ignored
// file is named though no picture copied it; a row's words speak of that row, the turn's total is
// said once; `show` folds a folder as `run` did; a checkout inside a run is neither "staged" nor
// "not in git". Real git, the built command.

describe('the turn-end list says what a person needs, once', () => {
  it('names an ignored file the command deleted, with why it has no copy', async () => {
    const repo = await cliRepo({ '.gitignore': 'debug.log\n', 'kept.txt': 'k\n' });
    await writeFile(path.join(repo.proj, '.env'), 'SECRET=1\n');
    await writeFile(path.join(repo.proj, 'debug.log'), 'log\n');
    const run = repo.tb(['run', '--', 'rm', '-f', '.env', 'debug.log']);
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/deleted +\.env/);
    expect(run.stderr).toMatch(/deleted +debug\.log +ignored: no copy was kept/);
  });

  it('says the turn total once, in the header, not on every deleted row', async () => {
    const files = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`f${String(i).padStart(2, '0')}.txt`, `${i}\n`]));
    const repo = await cliRepo(files);
    const run = repo.tb(['run', '--', 'sh', '-c', 'rm -f f*.txt']);
    expect(run.code).toBe(0);
    const lines = run.stderr.split('\n');
    expect(lines.filter((line) => line.includes('25 files deleted'))).toHaveLength(1);
    expect(lines.find((line) => line.startsWith('files:'))).toContain('25 files deleted');
    const rows = lines.filter((line) => /deleted +f\d+\.txt/.test(line));
    expect(rows).toHaveLength(25);
    for (const row of rows) expect(row).not.toMatch(/\d+ files deleted/);
  });

  it('show folds a deleted folder as run did, after its files came back too; --all lists every row', async () => {
    const files = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`website/p${i}.md`, `${i}\n`]));
    const repo = await cliRepo({ ...files, 'keep.txt': 'k\n' });
    const run = repo.tb(['run', '--', 'rm', '-rf', 'website']);
    expect(run.stderr).toContain('website/ (30 files)');
    const id = repo.newestId();
    repo.git('checkout', '-q', '--', 'website');
    const shown = repo.tb(['show', id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('website/ (30 files)');
    expect(shown.stdout.split('\n').filter((line) => line.includes('website/'))).toHaveLength(1);
    const all = repo.tb(['show', id, '--all']);
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n').filter((line) => /deleted +website\/p\d+\.md/.test(line))).toHaveLength(30);
  });

  it('a checkout inside a run is neither "staged" nor "not in git"; what is staged against the new HEAD is said', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    for (const name of ['b.txt', 'c.txt']) {
      await writeFile(path.join(repo.proj, name), `${name}\n`);
      repo.git('add', name);
      repo.git('commit', '-qm', name);
    }
    const back = repo.tb(['run', '--', 'git', 'checkout', '-q', 'HEAD~2']);
    expect(back.code).toBe(0);
    expect(back.stderr).toMatch(/deleted +b\.txt/);
    expect(back.stderr).toMatch(/deleted +c\.txt/);
    expect(back.stderr).toContain('HEAD moved');
    expect(back.stderr).not.toContain('not in git');
    expect(back.stderr).not.toContain('staged');
    const staged = repo.tb(['run', '--', 'sh', '-c', 'git checkout -q - && echo n > new.txt && git add new.txt']);
    expect(staged.code).toBe(0);
    expect(staged.stderr).toContain('index: 1 file staged against the new HEAD');
  });
});
