import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #12, "Lists a person can read": `--all` or `-n N` on every list; never `… and 1 more`;
// the fold line names what the folded rows did; `list` leaves out pictures in which nothing
// changed unless `--all`. Through the built binary in a real git repository.

const files = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`src/f${String(i).padStart(2, '0')}.txt`, `${i}\n`]));
const rowsOf = (text: string, word: string) => text.split('\n').filter((line) => line.trimStart().startsWith(word));

describe('lists a person can read', () => {
  it('folds past 10 rows with a line that names what the rest did; --all and -n N change the limit', async () => {
    const repo = await cliRepo(files);
    const run = repo.tb(['run', '--', 'sh', '-c', 'for f in src/f0*.txt src/f1[0-1].txt; do echo x >> $f; done; rm src/f12.txt src/f13.txt']);
    expect(run.code).toBe(0);
    expect(rowsOf(run.stderr, 'changed')).toHaveLength(10);
    expect(run.stderr).toContain('… and 4 more: 2 changed, 2 deleted (--all lists every one)');
    const id = repo.newestId();
    const all = repo.tb(['show', id, '--all']);
    expect(rowsOf(all.stdout, 'changed')).toHaveLength(12);
    expect(rowsOf(all.stdout, 'deleted')).toHaveLength(2);
    expect(all.stdout).not.toContain('more');
    const three = repo.tb(['show', id, '-n', '3']);
    expect(three.stdout).toMatch(/… and \d+ more: \d+ changed(, \d+ deleted)? \(--all lists every one\)/);
    const preview = repo.tb(['undo', '--dry-run', '-n', '2']);
    expect(rowsOf(preview.stdout, 'write back')).toHaveLength(2);
    expect(preview.stdout).toContain('… and 12 more: 10 to write back, 2 to recreate (--all lists every one)');
    const bad = repo.tb(['show', id, '-n', '0']);
    expect(bad.code).toBe(2);
  });

  it('never prints "… and 1 more": eleven rows show whole', async () => {
    const repo = await cliRepo(files);
    const run = repo.tb(['run', '--', 'sh', '-c', 'for f in src/f0*.txt src/f10.txt; do echo x >> $f; done']);
    expect(rowsOf(run.stderr, 'changed')).toHaveLength(11);
    expect(run.stderr).not.toContain('more');
  });

  it('list leaves out pictures in which nothing changed, says how many, and --all shows them', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'true']).code).toBe(0);
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const list = repo.tb(['list']).stdout.trim().split('\n');
    expect(list).toHaveLength(2);
    expect(list[0]).toMatch(/before sh -c 'echo b > a\.txt'.* 1 file changed {3}exit 0 · \d+\.\d s$/);
    expect(list[1]).toBe('1 picture in which nothing changed not shown (--all shows them)');
    expect(repo.tb(['list', '--all']).stdout.trim().split('\n')).toHaveLength(2);
    expect(repo.tb(['list', '--all']).stdout).toContain('before true');
  });
});

describe('what list says of each run', () => {
  it("shows each run's exit code and how long it ran", async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt; exit 3']).code).toBe(3);
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo c > a.txt']).code).toBe(0);
    const rows = repo.tb(['list']).stdout.trim().split('\n');
    expect(rows[0]).toMatch(/echo c > a\.txt'.* 1 file changed {3}exit 0 · \d+\.\d s$/);
    expect(rows[1]).toMatch(/exit 3'.* 1 file changed {3}exit 3 · \d+\.\d s$/);
  });
});
