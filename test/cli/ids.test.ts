import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// Issue #12, "Lists a person can read": an unknown id is "no picture <id> in this project" (exit
// 2), told apart from a pruned one; any unique prefix of 4 or more characters, of the full id or
// of the short id, works in any case. Through the built binary in a real git repository.

describe('ids a person types', () => {
  it('takes any unique prefix of 4 or more characters, in any case, of the short or the full id', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const id = repo.newestId();
    const short = id.slice(-8);
    for (const typed of [short, short.slice(0, 4).toUpperCase(), id.slice(0, 15), ` ${id} `]) {
      const shown = repo.tb(['show', typed]);
      expect(shown.code, `typed ${typed}`).toBe(0);
      expect(shown.stdout).toContain(`id ${id}`);
    }
    const tooShort = repo.tb(['show', short.slice(0, 3)]);
    expect(tooShort.code).toBe(2);
    expect(tooShort.stderr).toContain('not a checkpoint id');
  });

  it('says "no picture <id> in this project" (exit 2) for an id that never existed, and which prefix is ambiguous', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    for (let i = 0; i < 2; i++) expect(repo.tb(['run', '--', 'sh', '-c', `echo ${i} > a.txt`]).code).toBe(0);
    const unknown = repo.tb(['show', 'ABCD1234']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('no picture abcd1234 in this project');
    // Both ids start with the same milliseconds-since-1970 digits.
    const ambiguous = repo.tb(['show', repo.newestId().slice(0, 5)]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/matches \d+ pictures/);
  });

  it('tells a pruned id from one that never existed', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n', 'turnback.toml': '[checkpoints]\nretain = 1\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo 1 > a.txt']).code).toBe(0);
    const first = repo.newestId();
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo 2 > a.txt']).code).toBe(0);
    expect(repo.tb(['prune']).code).toBe(0);
    const pruned = repo.tb(['show', first.slice(-8)]);
    expect(pruned.code).toBe(1);
    expect(pruned.stderr).toContain('was pruned');
  });
});
