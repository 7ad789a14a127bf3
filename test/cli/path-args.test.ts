import { describe, expect, it } from 'vitest';
import { cliRepo } from './harness.js';

// A path outside the project given to a command is refused by that command's name (issue #30:
// `diff ID ../../etc/passwd` said "undo takes a path").

describe('a path outside the project', () => {
  it('is refused naming the command typed: diff, show, undo', async () => {
    const repo = await cliRepo({ 'a.txt': 'a\n' });
    expect(repo.tb(['run', '--', 'sh', '-c', 'echo b > a.txt']).code).toBe(0);
    const id = repo.newestId();
    for (const [command, args] of [
      ['diff', ['diff', id, '../../etc/passwd']],
      ['show', ['show', id, '../../etc/passwd']],
      ['undo', ['undo', id, '--path', '../../etc/passwd', '--yes']],
    ] as const) {
      const result = repo.tb([...args]);
      expect(result.code, command).toBe(2);
      expect(result.stderr, command).toContain(`${command} takes a path inside the project (../../etc/passwd)`);
    }
  });
});
